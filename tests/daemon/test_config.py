"""Configuration: defaults, overrides, and errors that say what to do (exit code 2)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from simreportd.daemon.cli.main import main
from simreportd.daemon.config import Config, load_config
from simreportd.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_config_toml_equals_the_embedded_defaults() -> None:
    shipped = load_config(ROOT / "config.toml", environ={})  # the file alone, no override of the suite's
    assert shipped == Config().resolve_paths(ROOT)


def test_relative_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[store]\npath = "data/e.sqlite3"\n')
    assert load_config(path).store.path == tmp_path / "data" / "e.sqlite3"


def test_environment_overrides_a_key_with_json_values(tmp_path: Path) -> None:
    config = load_config(None, {"SIMREPORTD_AGENT_MAX_TOOL_CALLS": "7", "SIMREPORTD_WATCH_ROOTS": '["/a", "/b"]',
                                "SIMREPORTD_LLM_MODEL": "qwen2.5"})
    assert config.agent.max_tool_calls == 7 and config.llm.model == "qwen2.5"
    assert [str(r) for r in config.watch.roots] == ["/a", "/b"]


@pytest.mark.parametrize("text, expected", [
    ('[agent]\nmax_tools = 3\n', ["unknown key [agent] max_tools", "allowed keys: min_tool_calls"]),
    ('[llm]\ntimeout_s = "soon"\n', ["[llm] timeout_s = 'soon' is invalid"]),
    ('[llm]\ntool_protocol = "smoke"\n', ["[llm] tool_protocol = 'smoke'", "'auto', 'native' or 'text'"]),
    ('[nosuch]\nx = 1\n', ["unknown key nosuch"]),
    ("[store\n", ["not valid TOML"]),
])
def test_bad_config_exits_2_with_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                text: str, expected: list[str]) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    assert main(["-c", str(path), "status"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for fragment in expected:
        assert fragment in err


def test_missing_config_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["status", "-c", str(tmp_path / "nope.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_unknown_environment_section_is_an_error() -> None:
    with pytest.raises(ConfigError, match="SIMREPORTD_NOPE_X"):
        load_config(None, {"SIMREPORTD_NOPE_X": "1"})


def test_every_config_key_is_documented_in_config_toml() -> None:
    shipped = tomllib.loads((ROOT / "config.toml").read_text())
    text = (ROOT / "config.toml").read_text()
    for section, model in Config.model_fields.items():
        assert set(shipped[section]) == set(model.annotation.model_fields), section
        body = text.split(f"\n[{section}]\n", 1)[1].split("\n[", 1)[0]
        for key in shipped[section]:
            before = ("\n" + body).split(f"\n{key} = ", 1)[0].rsplit("\n", 1)[-1]
            assert before.startswith("#"), f"[{section}] {key} has no comment above it"


def test_a_report_recorded_without_rules_gets_the_configuration_defaults() -> None:
    """ReportRules' own defaults (for events recorded by older versions) never drift from config.toml's,
    but for rules added later: those are off, as they were when such events were recorded."""
    from simreportd.agent.report.report_runner import settings_for
    from simreportd.agent.tools.toolspec import REPORT_TOOLS
    from simreportd.events.models import RULES_ADDED_LATER, ReportRules

    config = load_config(None)
    configured, recorded = settings_for(config.agent, config.llm, REPORT_TOOLS), ReportRules(tools=REPORT_TOOLS)
    assert configured.model_dump(exclude=RULES_ADDED_LATER) == recorded.model_dump(exclude=RULES_ADDED_LATER)
    assert not any(getattr(recorded, rule) for rule in RULES_ADDED_LATER)


def test_the_store_is_named_by_its_url_without_the_password_or_by_its_file() -> None:
    from simreportd.daemon.config import StoreConfig

    assert StoreConfig(url="postgresql://ann:s3cret@db.example:5432/events").where == \
        "postgresql://ann@db.example:5432/events"
    assert StoreConfig(path=Path("state/events.sqlite3")).where == "state/events.sqlite3"
