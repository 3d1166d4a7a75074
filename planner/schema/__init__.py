"""Strict, frozen pydantic models for every input: hardware, models, quants, scenarios."""
