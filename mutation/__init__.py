"""Mutation testing of the suites (issue 22): mutants of the reference's rules and model, each served as a
target, the unchanged suites run against it."""
