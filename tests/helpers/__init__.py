"""Helpers shared by the tests: windows, servers, adapters' fixtures."""
