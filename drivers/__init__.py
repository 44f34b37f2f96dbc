"""Drivers: programs that speak the driver protocol (JSON lines) for one SDK or implementation each."""
