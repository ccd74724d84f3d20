"""benchmarks/check_claims.py, the coarse accuracy check of the headline
claims (issue 31 item 4): its recorded errors are CURRENT.md's, its rows are
the ones README.md and doc/ cite, and it runs (on a slice, not compared)."""
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "benchmarks")
if not os.path.isdir(BENCH):                       # tests run from an installed copy
    pytest.skip("benchmarks/ not found beside tests/", allow_module_level=True)
sys.path.insert(0, BENCH)
import check_claims  # noqa: E402


def _rows():
    """CURRENT.md's rows: id -> the row's text."""
    with open(os.path.join(BENCH, "CURRENT.md"), encoding="utf-8") as f:
        return {m.group(1): line for line in f
                if (m := re.match(r"\| `([a-z0-9-]+)` \|", line))}


def test_each_claim_is_its_rows_number():
    rows = _rows()
    for claim in check_claims.CLAIMS:
        assert claim.row in rows, claim.row
        assert f"{claim.error:.2f}" in rows[claim.row], (claim.row, claim.error)


def test_the_headlines_are_claims():
    """Every CURRENT.md row README.md cites for a test error is checked."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        cited = set(re.findall(r"CURRENT\.md#([a-z0-9-]+)", f.read()))
    rows = _rows()
    with_errors = {r for r in cited if r in rows and "error" in rows[r]}
    assert with_errors <= {c.row for c in check_claims.CLAIMS}


def test_runs_on_a_slice(capsys):
    assert check_claims.main(["--only", "tta-a9a-dsg", "--rows", "300", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"tta-a9a-dsg: test error \d+\.\d\d% \(recorded 15\.25%.*not compared", out)


def test_unknown_claim_is_named(capsys):
    with pytest.raises(SystemExit):
        check_claims.main(["--only", "no-such-row"])
    assert "no claim no-such-row" in capsys.readouterr().err
