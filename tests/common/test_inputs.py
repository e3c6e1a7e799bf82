"""Unit tests of assets/common/inputs.py."""

import pytest

from assets.common import inputs
from assets.common.inputs import InputError


@pytest.mark.parametrize(
    "content, needle",
    [(None, "no such file"), (b"", "empty"), (b"\xff\xfe\x00a", "not UTF-8"), (b"a;b\n1;2\n", "';'"),
     (b"a,a\n1,2\n", "duplicated"), (b"a,b\n", "header only"), (b"x,b\n1,2\n", "missing column")],
)
def test_read_csv_refuses(tmp_path, content, needle):
    p = tmp_path / "f.csv"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(InputError, match=needle) as e:
        inputs.read_csv(p, required=("a", "b"))
    assert str(p) in str(e.value)


def test_read_csv_bom_ok(tmp_path):
    p = tmp_path / "f.csv"
    p.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n")
    assert inputs.read_csv(p, required=("a", "b")) == [{"a": "1", "b": "2"}]


def test_jsonl_empty_and_parse_error(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text("\n\n")
    with pytest.raises(InputError, match="empty"):
        inputs.read_jsonl(p)
    p.write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(InputError, match="line 2 column"):
        inputs.read_jsonl(p)


def test_run_cli_exit2(capsys):
    @inputs.run_cli
    def main(argv=None):
        raise InputError("x.csv: file is empty")

    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.csv" in err


def test_check_range():
    with pytest.raises(InputError, match="alpha"):
        inputs.check_range("alpha", 1.5, 0, 1)
    assert inputs.check_range("alpha", 0.1, 0, 1) == 0.1
