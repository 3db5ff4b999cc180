"""The `llm` style's English talk: how people write, and the two English scenarios' arguments and details."""

from __future__ import annotations

from .talk import Argument, Detail, Register, Talk

ENGLISH = Register(
    language="en", joiner=" ",
    openers=("Honestly,", "Ok hot take:", "Unpopular opinion:", "Let's be real.", "Serious question for the timeline:",
             "Been chewing on this all day.", "Not to be dramatic but", "Look,", "So.", "PSA:", "Can we talk about this?",
             "Sigh.", "Thread 🧵", "Genuinely,", "Ok so", "Morning all."),
    closers=("Change my mind.", "Just saying.", "Thoughts?", "That's it, that's the post.", "Fight me.", "Rant over.",
             "Am I wrong?", "Simple as that.", "Do better.", "Wake up, people.", "Not hard.", "End of.",
             "Anyway, back to work.", "Rt if you agree."),
    agree=("Exactly this.", "100%.", "Couldn't agree more.", "This right here.", "Yep.", "Said it better than me.",
           "+1.", "Finally someone says it.", "So true.", "Adding to this:"),
    rebut=("No.", "Respectfully, that's wrong.", "Nope, sorry.", "That's not the point though.",
           "Have you actually looked into this?", "Easy to say.", "Hard disagree.", "This take is wild.",
           "Except it isn't true.", "Come on.", "I'm going to push back here."),
    changed=("I've changed my mind on this.", "Ok, I'm switching sides.", "I used to defend this. Not anymore.",
             "Never thought I'd say this, but here we are.", "Update: my view has flipped.",
             "I was wrong about this and I'll own it."),
    quoting=("‘{q}’ says @{who}. Really?", "Re @{who}: ‘{q}’", "@{who} wrote ‘{q}’ and honestly",
             "Saw this from @{who}: ‘{q}’", "‘{q}’ (@{who})"),  # not ASCII quotes: reports quote with those
    asides=("Been going back and forth on this all week.", "I talked to a few people about it today.",
            "I read the whole document on the bus.", "Speaking from experience here.",
            "Not an expert, just someone who lives with the consequences.", "My family is split on this.",
            "I keep seeing the same three takes on here.", "I've seen this play out before.",
            "Said the same at dinner and nearly started a war.", "Long post, sorry."),
    chatter=("Anyone else get soaked on the way in this morning?", "The canteen ran out of soup again. Tragic.",
             "What a match last night!", "Can't believe it's only Wednesday.", "My cat knocked my coffee onto the keyboard.",
             "Looking for a decent barber, recommendations?", "Sunset over the river tonight was unreal.",
             "New running shoes, old knees.", "Who else is watching the final on Saturday?",
             "Made sourdough for the first time. It's a brick.", "Neighbour's dog has been barking since 6am.",
             "Finished my book, need a new one.", "Heatwave next week apparently?", "Lunch: leftover curry, zero regrets.",
             "Power nap achieved.", "Why is every playlist the same twelve songs", "Gym was packed, went home.",
             "Somebody tell me the weekend is close."),
    emojis=("😤", "🙄", "👏", "💯", "😂", "🤔", "🔥", "😩", "🙌", "👀", "😬", "✅", "❌", "🤷", "😅", "💀"),
    typos=(("their", "there"), ("because", "becuase"), ("really", "realy"), ("people", "poeple"),
           ("definitely", "definately"), ("the ", "teh "), ("would", "woudl"), ("about", "abuot")),
)

CONGESTION = Talk(
    register=ENGLISH,
    arguments={
        "supportive:0": Argument("Buses got faster during the trial", (
            "Buses were quicker during the trial.",
            "My bus into town took {n} minutes less every single day the trial ran.",
            "Fewer cars means the buses actually move. We saw it on the ring road.",
            "Pricing the roads is the only thing that has ever made public transport run on time here.",
            "Remember the trial? Timetables worked. Buses stopped crawling behind queues of single-occupancy SUVs.",
            "Public transport finally had room to breathe while the pilot ran, and my commute showed it.",
            "Half the reason buses are late is cars clogging every junction. Charge the cars, free the buses.",
        )),
        "supportive:1": Argument("Cleaner air and better health", (
            "Cleaner air. That's the whole argument.",
            "My kid's asthma got noticeably better when the traffic dropped.",
            "We're breathing exhaust downtown every day and pretending it's free.",
            "Pollution readings fell during the pilot and the GP surgery saw fewer wheezy kids.",
            "Nobody puts a price on lungs, but the charge finally puts one on fumes.",
            "Walk down the high street at rush hour and tell me the fumes aren't a health crisis.",
            "Every doctor I know says the same thing: less traffic, fewer kids on inhalers.",
        )),
        "supportive:2": Argument("Other cities show road pricing works", (
            "Every city that tried it kept it.",
            "Stockholm held a referendum after the trial and people voted to keep the charge.",
            "London, Singapore, Stockholm: traffic fell and nobody went back.",
            "The evidence from abroad is boring and consistent: price congestion and you get less of it.",
            "Name one city that scrapped road pricing after seeing the results. I'll wait.",
            "This isn't an experiment, it's been done for twenty years elsewhere with the same result.",
            "Look abroad: road pricing cut queues everywhere it went, and voters kept it.",
        )),
        "spike:supportive:0": Argument("Keep the charge but ring-fence the revenue for transit", (
            "Write the ring-fence into law and move on.",
            "The memo is bad, but the answer is a legal lock on the money, not killing the scheme.",
            "Don't throw out cleaner streets because of one leaked draft. Ring-fence the revenue for buses.",
            "I still back the charge. Every penny for transport, in statute, so no council can raid it.",
            "Stadium or not, the fix is simple: the money goes to buses by law and we audit it yearly.",
            "Fine, the council messed up. Bind them to spend it on transit and keep the scheme.",
            "A legal guarantee that the money funds buses is all I need to keep supporting this.",
        )),
        "opposing:0": Argument("A tax on people who cannot avoid driving", (
            "It's just a tax on workers.",
            "Not everyone can work from home. I drive because there's no other way to my job.",
            "£{n} a day adds up to a car payment every month for people already scraping by.",
            "Tradespeople can't carry tools on a bus. This hits the ones who can least afford it.",
            "The people who'll pay are nurses, carers and builders, not the folks writing the policy.",
            "Some of us have no choice but to drive, and now we get billed daily for it.",
            "Working people subsidising a policy designed by people who cycle to the office.",
        )),
        "opposing:1": Argument("Small shops downtown will lose customers", (
            "RIP Market Street shops.",
            "The high street is already dying. Charge people to visit and they'll go to the retail park.",
            "Independent shops will lose their customers to the out-of-town malls with free parking.",
            "Ask any shop owner downtown what a quiet Saturday feels like. Now make it every Saturday.",
            "Footfall is everything for small retailers and the charge tells shoppers to stay away.",
            "My favourite shops downtown are hanging on by a thread. This will finish them.",
            "Shoppers will just drive to the retail park with free parking, and the centre will empty.",
        )),
        "opposing:2": Argument("Night and shift workers have no alternative", (
            "No buses after 11. Now what?",
            "Night-shift workers weren't consulted. Public transport basically stops when our shifts end.",
            "If you finish work at 2am there is no bus, so the charge is just a fine for working nights.",
            "Cleaners, porters, bar staff: all of us drive because the city shuts its transport at night.",
            "Who's going to get the early cleaners in at 5am? There's no transport then.",
            "Shift workers can't time their jobs around a bus timetable that stops at night.",
        )),
        "spike:opposing:0": Argument("The memo proves the charge is a stadium fund: scrap it", (
            "Stadium fund. Called it.",
            "So it was never about clean air. The leaked memo says the money builds a stadium.",
            "Scrap the charge and audit the council. They lied about where the money goes.",
            "How can anyone trust the council now? They sold us buses and planned a stadium.",
            "The memo settles it: this is a cash grab dressed up as climate policy.",
            "They told us buses and clean air. The leak shows a sports ground. Kill the scheme.",
            "A stadium, paid for by people stuck in traffic. Bin the charge.",
        )),
        "neutral:0": Argument("Asking for the real numbers and zone details", (
            "Where are the actual numbers?",
            "Has anyone found the boundary map? The consultation document is {n} pages and I still can't tell.",
            "Genuine question: how much would a daily trip cost, and when exactly does it apply?",
            "I'd like to see the traffic model before I decide. Is it published anywhere?",
            "Before anyone argues further, can we see the projected costs and the exact zone?",
            "What's the daily price and where does the boundary run? Still no straight answer.",
        )),
        "neutral:1": Argument("Would support it with exemptions and conditions", (
            "Yes, with exemptions.",
            "I could back it if carers and night workers were exempt. Is that on the table?",
            "Support in principle, but only with a discount for low incomes and a review after a year.",
            "Conditional yes from me: exemptions for disabled drivers and a public report on the revenue.",
            "I'm not against it, but vulnerable people need protecting first.",
            "Give carers and low earners a break and review it after twelve months, then I'm in.",
        )),
        "observer:0": Argument("Reports of turnout and polls on the charge", (
            "Packed town hall tonight.",
            "Live from the council chamber: {n} people signed up to speak on the charge.",
            "New poll out: a narrow majority backs the charge if the revenue is kept for transit.",
            "Reporting from the consultation session, where the queue went out the door and round the block.",
            "Turnout at tonight's consultation was the biggest the council has seen in years.",
            "Survey numbers this week show opinion almost evenly split on the scheme.",
        )),
        "spike:observer:0": Argument("The council's response to the leaked memo", (
            "Council: the memo is 'an early draft'.",
            "The council says the leaked memo was an early draft and no revenue has been allocated.",
            "Official response just in: spokesperson calls the stadium memo 'one option among many, never adopted'.",
            "Statement from the council press office denies any decision to fund a stadium from the charge.",
            "Council officials insist no money has been promised to any stadium project.",
            "The authority has put out a statement calling the memo an unadopted draft.",
        )),
    },
    hashtags={"supportive": ("#CleanAir", "#BusesFirst", "#ChargeIt"),
              "opposing": ("#ScrapTheCharge", "#StadiumGate", "#NotATax"),
              "neutral": ("#ShowUsTheNumbers", "#AskTheCouncil"), "observer": ("#CouncilWatch", "#LocalNews"),
              "": ("#CongestionCharge", "#Downtown", "#CityCouncil")},
    details=(
        Detail("opposing:1", "Rosie's Bakery", (
            "Rosie's Bakery on Market Street lost half its Saturday regulars during the trial.",
            "Talked to the owner of Rosie's Bakery: weekend takings down by nearly half."),
            {"en": "Which bakery said the charge cost it customers?", "zh": "哪家面包店说收费让它流失了顾客？"}),
        Detail("supportive:1", "peak-flow", (
            "My daughter's peak-flow readings went up every week of the pilot.",),
            {"en": "Did anyone measure a child's breathing getting better while the trial ran?",
             "zh": "有人说试点期间孩子的呼吸指标变好了吗？"}),
        Detail("supportive:0", "number 42", (
            "The number 42 now gets to the hospital in 18 minutes instead of 35.",
            "Even the number 42 runs on time now, and that never happens."),
            {"en": "Which bus route got much quicker to the hospital?", "zh": "哪条公交线路去医院变快了很多？"}),
        Detail("opposing:2", "night porters", (
            "The night porters at St Brigid's finish at 3am. There's no bus for them at all.",),
            {"en": "Which hospital staff would be hit by the fee after late shifts?",
             "zh": "哪家医院的夜班员工会被收费伤害？"}),
        Detail("supportive:2", "Gothenburg", (
            "Gothenburg brought theirs in and traffic over the bridges dropped a fifth.",),
            {"en": "Which Swedish city did people cite as proof that road pricing works?",
             "zh": "大家举了瑞典哪个城市证明道路收费有效？"}),
        Detail("opposing:0", "plumbing van", (
            "For my plumbing van that's about £220 a month before I've fixed a single tap.",),
            {"en": "Who said the fee would cost their work vehicle hundreds every month?",
             "zh": "谁说收费每个月会让他的工作用车多花几百英镑？"}),
        Detail("neutral:0", "page 212", (
            "The boundary map is buried on page 212, in an appendix nobody will open.",),
            {"en": "Where in the consultation document is the zone map hidden?", "zh": "收费区域地图藏在咨询文件的哪里？"}),
        Detail("neutral:1", "blue badge", (
            "What happens to blue badge holders? Nothing in the plan says.",),
            {"en": "Did anyone ask whether disabled drivers would be exempt?", "zh": "有人问过残障司机能否免缴吗？"}),
        Detail("observer:0", "Hollis Hall", (
            "They had to open the overflow room at Hollis Hall.",
            "Hollis Hall was standing room only by seven."),
            {"en": "Where was the public meeting so crowded it needed an extra room?",
             "zh": "公开会议在哪里举行，人多到要加开房间？"}),
        Detail("spike:opposing:0", "Kestrel Park", (
            "A new stand at Kestrel Park, paid for by commuters. Unbelievable.",
            "Kestrel Park gets a stadium and we get a bill."),
            {"en": "What is the name of the stadium the money would supposedly pay for?",
             "zh": "据说这笔钱要用来建的体育场叫什么？"}),
        Detail("spike:supportive:0", "Adeyemi amendment", (
            "The Adeyemi amendment would lock every penny into transport. Pass it.",),
            {"en": "Which councillor proposed locking the revenue for transport by law?",
             "zh": "哪位议员提议立法把收入锁定用于交通？"}),
        Detail("spike:observer:0", "14 February", (
            "The leaked document is dated 14 February, three weeks before the vote.",),
            {"en": "When was the leaked memo written?", "zh": "泄露的备忘录是哪天写的？"}),
        Detail("chatter", "injera", (
            "The food truck by the harbour does the best injera I've had outside Addis.",),
            {"en": "Did anyone recommend a place to eat Ethiopian food?", "zh": "有人推荐吃埃塞俄比亚菜的地方吗？"}),
        Detail("chatter", "Harriers", (
            "Harriers won 3-1 and the away end was singing for an hour.",),
            {"en": "Which local football team won at the weekend?", "zh": "周末哪支本地足球队赢了？"}),
        Detail("opposing:1", "cobbler", (
            "The cobbler on Tanner Lane says he'll close by summer if the charge comes in.",),
            {"en": "Which shoe-repair shop is worried about closing?", "zh": "哪家修鞋铺担心要关门？"}),
        Detail("supportive:1", "Quay Road sensor", (
            "The Quay Road sensor showed nitrogen dioxide at its lowest in a decade.",),
            {"en": "Where was a pollution monitor showing lower readings?", "zh": "哪里的污染监测器读数下降了？"}),
        Detail("opposing:2", "23:10", (
            "The last bus out of the centre leaves at 23:10. My shift ends at midnight.",),
            {"en": "What time does the final bus leave downtown?", "zh": "市中心末班车几点开？"}),
        Detail("supportive:0", "cargo bike", (
            "My cargo bike deliveries got twenty minutes quicker per round.",),
            {"en": "Did a delivery rider say their rounds got faster?", "zh": "有送货骑手说他们的送货变快了吗？"}),
        Detail("neutral:0", "harbour car park", (
            "Is the harbour car park inside the zone or not? Nobody can tell me.",),
            {"en": "Is the parking by the waterfront inside the charging area?", "zh": "海边那个停车场在收费区内吗？"}),
        Detail("chatter", "ferry", (
            "Fog so thick they cancelled the morning ferry.",),
            {"en": "Was any boat service cancelled because of the weather?", "zh": "有没有船因为天气停航？"}),
    ),
)

PROCTORING = Talk(
    register=ENGLISH,
    arguments={
        "supportive:0": Argument("Coursework measures real skills better than exams", (
            "Coursework > exams.",
            "Three-hour exam marathons test memory, not ability. Coursework tests what you can actually do.",
            "Finally an assessment that looks like real work instead of a timed memory dump.",
            "Projects show how someone thinks over weeks. A single exam morning shows how well they slept.",
            "I learned more from one term project than from every final I crammed for.",
            "Nobody in a real job gets three hours and no internet to solve a problem.",
            "Assess people on work they build over time, not on one stressful morning.",
        )),
        "supportive:1": Argument("Exams cause too much stress", (
            "Exam season wrecks people.",
            "Half my cohort ended up in counselling during finals week. Anything that ends that is progress.",
            "The stress of finals is not a rite of passage, it's a health problem.",
            "I've watched friends fall apart in the exam hall. Spreading assessment out is kinder.",
            "Finals week is a mental health emergency every single year.",
            "Spreading assessment across the term would take so much pressure off students.",
        )),
        "supportive:2": Argument("The pilot showed less cheating and fairer grades", (
            "The pilot worked.",
            "Misconduct cases went down in the pilot modules, not up.",
            "Pilot results: fewer cheating cases and grades that tracked the coursework closely.",
            "People said it would be a cheating free-for-all. The pilot data says the opposite.",
            "The trial modules had cleaner results than the old exam system ever produced.",
            "Academic integrity actually improved in the trial, according to the faculty's own figures.",
        )),
        "spike:supportive:0": Argument("Fix the flagging with human review, keep coursework", (
            "Fix the flags, keep the coursework.",
            "That case is awful. Put a human check on every flag before launch, but don't scrap coursework.",
            "The answer to a broken flag is human review, not going back to exam halls.",
            "Nobody should be flagged by a machine alone. Add review and an appeal, then carry on.",
            "Terrible case, but a person reviewing each alert would have stopped it. Keep the reform.",
            "Add human oversight and a proper appeals route, and the plan is still better than exams.",
        )),
        "opposing:0": Argument("Camera monitoring at home is surveillance", (
            "This is surveillance.",
            "A camera watching my bedroom for hours every week. No thanks.",
            "They want to record our homes and call it assessment.",
            "My room is private. Being watched by software while I work at my desk is not normal.",
            "Webcams on, microphones on, in our own homes. How is anyone fine with this?",
            "Software recording me at my own desk is a privacy violation, full stop.",
            "Having my home filmed for coursework feels like being watched by a stranger.",
        )),
        "opposing:1": Argument("The AI model is unaudited and makes false flags", (
            "The model is a black box.",
            "Nobody has audited this software and it already flags innocent people.",
            "False positives everywhere in the pilot and no one can explain why it flagged them.",
            "An algorithm nobody can inspect decides who cheated. That should scare everyone.",
            "Show me the error rate. Oh wait, they won't publish it.",
            "No independent audit, no published accuracy, and already wrongly accusing people.",
            "If the algorithm can't be explained, it shouldn't be allowed to accuse anyone.",
        )),
        "opposing:2": Argument("Students without a quiet private room get flagged more", (
            "Not everyone has a quiet room.",
            "If you share a flat or look after siblings you'll get flagged constantly.",
            "The software punishes students who can't afford a private, silent study space.",
            "Rich kids with their own rooms will sail through. Everyone else gets flagged for background noise.",
            "Students in crowded homes will be punished for noise they can't control.",
            "This rewards those who can afford a private study room and penalises everyone else.",
        )),
        "spike:opposing:0": Argument("The seizure case proves it punishes disabled students: stop it", (
            "Stop it now.",
            "A student having a seizure was flagged as cheating. Scrap the whole thing.",
            "This is exactly what we warned about: the software punishes disabled students.",
            "If a medical emergency counts as suspicious behaviour, the system is broken beyond repair.",
            "A medical episode treated as cheating. Pull the software today.",
            "Disabled students are being failed by this system. Halt it before anyone else is hurt.",
        )),
        "neutral:0": Argument("Who stores the recordings and for how long", (
            "Where does the footage go?",
            "Genuine question: who keeps the recordings, and for how long?",
            "Is the data stored by the university or by the vendor? Nobody has said.",
            "Can someone point me to the data retention policy for this? I can't find one.",
            "How long are these videos kept, and who can watch them?",
            "I'd like to know which company holds the footage and under what rules.",
        )),
        "neutral:1": Argument("Coursework yes, proctoring unsure: wants conditions", (
            "Coursework yes, cameras maybe.",
            "Can we have the coursework without the proctoring? I'd sign up for that tomorrow.",
            "I'm open to it if there's a real appeal process and someone independent checks the flags.",
            "Happy to try it, as long as students can opt for an in-person alternative.",
            "I'd support the change if the camera part were optional.",
            "Reform assessment, sure, but only with safeguards and a way to challenge decisions.",
        )),
        "observer:0": Argument("Reports on surveys and votes about the plan", (
            "Union survey results are in.",
            "Student union survey, {n} replies: most oppose the plan as it stands.",
            "Senate will vote on the proposal next month, agenda published today.",
            "Reporting from the open forum: long queue for the microphone, lots of questions about data.",
            "Latest poll of students shows strong concern about the monitoring element.",
            "The academic board meets on this soon; the papers are now public.",
        )),
        "spike:observer:0": Argument("The university's response to the seizure case", (
            "University responds to the seizure case.",
            "The university says the flag was reviewed by a human and cleared within a day.",
            "Official statement: the seizure flag was 'never escalated' and the student faced no penalty.",
            "Press office says an independent review of the flagging rules will report before launch.",
            "University officials say the flagged student was never penalised.",
            "The institution has announced a review of how alerts are handled after the case.",
        )),
    },
    hashtags={"supportive": ("#CourseworkNotExams", "#StudentWellbeing"),
              "opposing": ("#NoSpyCams", "#StopAIProctoring", "#PrivacyMatters"),
              "neutral": ("#DataQuestions",), "observer": ("#CampusNews", "#SenateWatch"),
              "": ("#AIProctoring", "#UniLife", "#Exams")},
    details=(
        Detail("opposing:0", "wardrobe mirror", (
            "I got flagged because my flatmate walked past the wardrobe mirror behind me.",),
            {"en": "Did someone get flagged because of something reflected in their room?",
             "zh": "有人因为房间里的镜子反光被系统标记了吗？"}),
        Detail("opposing:1", "reading questions aloud", (
            "It flagged me for reading questions aloud, which is literally how I think.",
            "Apparently reading questions aloud counts as 'suspicious audio'."),
            {"en": "Which thinking habit got students marked as suspicious?", "zh": "哪种思考习惯让学生被判为可疑？"}),
        Detail("opposing:2", "two younger brothers", (
            "I share a bedroom with my two younger brothers. Where exactly am I meant to sit?",),
            {"en": "Who said they share a room with siblings and can never get quiet?",
             "zh": "谁说自己和弟弟们合住一间房，根本安静不下来？"}),
        Detail("supportive:1", "sports hall", (
            "I had a panic attack in the sports hall during my second-year finals.",),
            {"en": "Where did a student have a panic attack during exams?", "zh": "有学生在考试时在哪里惊恐发作？"}),
        Detail("supportive:0", "bridge design", (
            "My bridge design portfolio says more about me than any exam score.",),
            {"en": "Which engineering project did someone say shows real skill better than an exam?",
             "zh": "有人说哪个工程项目比考试更能体现真本事？"}),
        Detail("supportive:2", "Lindqvist", (
            "Professor Lindqvist's pilot modules had the lowest misconduct rate in the faculty.",),
            {"en": "Which lecturer ran the trial modules with fewer cheating cases?", "zh": "哪位教授主持的试点课程作弊更少？"}),
        Detail("neutral:0", "Ohio", (
            "Someone told me the recordings sit on servers in Ohio. Is that true?",),
            {"en": "In which place are the exam recordings kept?", "zh": "考试录像存放在什么地方？"}),
        Detail("neutral:1", "10-day appeal", (
            "A 10-day appeal window with a human panel would win me over.",),
            {"en": "How long would students have to contest a flag?", "zh": "学生有多长时间可以申诉标记？"}),
        Detail("observer:0", "Bernard Hall", (
            "The open forum in Bernard Hall ran an hour over time.",
            "Bernard Hall was full for the student forum tonight."),
            {"en": "Where did the students' meeting about the plan take place?", "zh": "学生讨论这个计划的会议在哪里开？"}),
        Detail("spike:opposing:0", "Epilepsy Society", (
            "The Epilepsy Society has written to the vice-chancellor about this.",),
            {"en": "Which charity spoke up about the student who had a fit?", "zh": "哪个慈善机构为癫痫发作的学生发声？"}),
        Detail("spike:supportive:0", "two-person review", (
            "A two-person review of every flag would have caught this in minutes.",),
            {"en": "Who suggested that every flag should be checked by two people?", "zh": "谁建议每个标记都由两个人复核？"}),
        Detail("spike:observer:0", "Dean Okoro", (
            "Dean Okoro told the student paper the case was cleared within 24 hours.",),
            {"en": "Which university official answered the seizure story?", "zh": "哪位校方官员回应了癫痫事件？"}),
        Detail("chatter", "vending machine", (
            "The library vending machine ate two pound coins and gave me nothing.",),
            {"en": "Did anyone complain about a snack machine?", "zh": "有人抱怨零食售卖机吗？"}),
        Detail("chatter", "regatta", (
            "Our rowing eight won the regatta this morning!!",),
            {"en": "Which boat race did a university team win?", "zh": "学校的队伍赢了什么划船比赛？"}),
        Detail("opposing:0", "green camera light", (
            "The little green camera light stays on even after the session ends.",),
            {"en": "Who mentioned the webcam indicator staying lit?", "zh": "谁提到摄像头指示灯一直亮着？"}),
        Detail("supportive:1", "nine-week waitlist", (
            "The counselling service had a nine-week waitlist in May.",),
            {"en": "How long did students wait to see a counsellor?", "zh": "学生要等多久才能见到心理咨询师？"}),
        Detail("opposing:1", "glasses glare", (
            "My glasses glare makes it think I'm looking away every few seconds.",),
            {"en": "Did anyone's spectacles confuse the software?", "zh": "有人的眼镜让软件出错了吗？"}),
        Detail("opposing:2", "carrels", (
            "The library carrels are booked out weeks ahead, so that's not an option either.",),
            {"en": "Are there private study booths on campus students could use instead?",
             "zh": "校园里有没有可以替代的独立自习隔间？"}),
        Detail("neutral:0", "subject access request", (
            "I've sent a subject access request to see my own recordings.",),
            {"en": "Has anyone formally asked the university for their own recorded data?",
             "zh": "有人正式向学校申请查看自己的录像数据吗？"}),
        Detail("chatter", "power cut", (
            "Another power cut in the east dorms, studying by phone torch.",),
            {"en": "Did the student housing lose electricity?", "zh": "学生宿舍停电了吗？"}),
    ),
)
