"""E2B's ``data`` result: a pandas DataFrame's columns, beside its HTML, as
E2B's own kernel gives them (``result.data``, what its ``test_data`` reads).

pandas is used when this machine has it; else a stand-in ``pandas`` module
(a ``DataFrame`` with ``to_dict`` and ``_repr_html_``) is put in the kernel's
``sys.modules`` first, which is all the kernel's formatter looks at."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.timeout(180)

_STAND_IN = """
import sys, types, datetime
if "pandas" not in sys.modules:
    try:
        import pandas
    except ImportError:
        pandas = types.ModuleType("pandas")
        class DataFrame:
            def __init__(self, columns):
                self.columns = columns
            def to_dict(self, orient):
                assert orient == "list"
                return dict(self.columns)
            def _repr_html_(self):
                return "<table></table>"
        pandas.DataFrame = DataFrame
        sys.modules["pandas"] = pandas
"""


def test_a_dataframe_comes_back_with_its_columns_as_data(sandbox) -> None:  # type: ignore[no-untyped-def]
    sandbox.run_code(_STAND_IN)
    when = "datetime.datetime(2026, 1, 2, 3, 4, 5)"
    result = sandbox.run_code(
        f"import pandas as pd\npd.DataFrame({{'a': [1, 2, 3], 'at': [{when}] * 3}})"
    )
    assert result.error is None, result.error
    frame = result.results[0]
    assert frame.is_main_result
    assert frame.data == {"a": [1, 2, 3], "at": ["2026-01-02T03:04:05"] * 3}
    assert frame.html
    # Anything else displayed carries no data.
    assert sandbox.run_code("{'a': [1]}").results[0].data is None


@pytest.mark.skipif(importlib.util.find_spec("pandas") is not None, reason="pandas is here")
def test_without_pandas_nothing_is_imported_for_tables(sandbox) -> None:  # type: ignore[no-untyped-def]
    """The formatter never imports pandas itself."""
    result = sandbox.run_code("import sys\n1 + 1\n'pandas' in sys.modules")
    assert result.text == "False"
