"""A discovery reads simulation_config.json for the folder's id, then for its setup: the second read takes the
first's while the file is unchanged (daemon/ingest/folder.py), and reads the file again once it changed."""

from __future__ import annotations

import json
from pathlib import Path

from simreportd.daemon.ingest import folder as folder_module
from simreportd.daemon.ingest.folder import configured_id, read_setup


def write_config(path: Path, requirement: str) -> None:
    path.write_text(json.dumps({"simulation_id": "sim_a", "simulation_requirement": requirement,
                                "agent_configs": [{"agent_id": 1, "entity_name": "Ann"}]}))


def test_the_setup_takes_the_config_read_for_the_id_once_and_reads_a_changed_one(tmp_path: Path) -> None:
    config = tmp_path / "simulation_config.json"
    write_config(config, "first")
    alone = read_setup(tmp_path)
    assert configured_id(tmp_path) == "sim_a" and tmp_path in folder_module._READ_FOR_ID
    assert read_setup(tmp_path) == alone and tmp_path not in folder_module._READ_FOR_ID  # taken, once
    assert configured_id(tmp_path) == "sim_a"
    write_config(config, "second, longer")  # another size: another file
    assert read_setup(tmp_path).requirement == "second, longer"
    assert read_setup(tmp_path).requirement == "second, longer" and alone.requirement == "first"
