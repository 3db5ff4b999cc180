"""The stand-in simulator behind `simreportd simulate`: a seeded story written in MiroFish's and OASIS's formats,
its ground truth, and the scorer that checks a report against it. Nothing in the daemon imports it."""
