"""Case generators for numpy_oracle.py: HLO modules plus NumPy-computed expected results.

Each cases_*.py module exposes generate(ctx), which adds cases to ctx (see case.py).
Expected values are derived here from XLA's operation semantics with NumPy and plain
Python integers, never by porting the C++ evaluator.
"""
