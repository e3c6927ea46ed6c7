"""Fixtures shared by the validation tests."""

import pandas as pd
import pytest

from dse.validate.suite import load_measurements, run_suite


@pytest.fixture(scope="session")
def shipped_results() -> pd.DataFrame:
    """``run_suite`` over the shipped measurements and templates, once per test session (each test takes a copy)."""
    return run_suite(load_measurements())
