"""The `simreportd` command line: parsing (`main`), one coroutine per command (`commands`), hand-over and progress."""
