"""The shipped catalog, installed as the package planner.catalogs (one YAML per entry, by kind).

A regular package, not a namespace one: setuptools' editable install maps it only then.
"""
