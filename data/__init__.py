"""Data shipped with planner, installed as the package planner.data (calibration measurements).

A regular package, not a namespace one: setuptools' editable install maps it only then.
"""
