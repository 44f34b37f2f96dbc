"""Root conftest: the project's own tests drive pytest runs with pytester. The rocketmq-conformance
plugin itself comes from the package's pytest11 entry point (``rocketmq_conformance``)."""
pytest_plugins = ["pytester"]
