"""Root conftest: load the rocketmq-conformance plugin for the project's own test runs."""
pytest_plugins = ["suites.plugin", "pytester"]
