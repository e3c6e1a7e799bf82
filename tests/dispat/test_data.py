"""Tables, splits, schema, serialisation round trip and bad input (errors name column and row)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from assets.dispat import data as D
from assets.dispat import serialize as S

SIZES = D.SplitSizes(200, 100, 85, 0.15)


def _splits(name: str, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return D.make_splits(name, D.raw_table(name, SIZES, rng), SIZES, rng)


@pytest.mark.parametrize("name", ["synthetic_transactions", "fair", "breast_cancer"])
def test_splits_are_normal_only_outside_test_with_the_declared_ratio(name):
    fr = _splits(name)
    assert (fr.loc[fr.split != "test", "label"] == 0).all()
    ratio = fr.loc[fr.split == "test", "label"].mean()
    assert 0.05 <= ratio <= 0.2
    assert fr["row_id"].is_unique


def test_synthetic_anomaly_types_are_what_they_say():
    rng = np.random.default_rng(3)
    t = D.synthetic_transactions(400, 40, rng)
    normal, anom = t[t.label == 0], t[t.label == 1]
    assert set(anom.anomaly_type) == {"global", "local", "dependency", "clustered"}
    # every normal description belongs to its category; every dependency anomaly's does not
    own = {c: set(v) for c, v in D.DESCRIPTION_WORDS.items()}
    assert all(d in own[c] for c, d in zip(normal.category, normal.description))
    dep = anom[anom.anomaly_type == "dependency"]
    assert all(d not in own[c] for c, d in zip(dep.category, dep.description))
    glob = anom[anom.anomaly_type == "global"]
    assert glob.amount.min() > normal.amount.median() * 5


def test_fair_swap_anomalies_change_two_or_three_values():
    rng = np.random.default_rng(0)
    fair = D.load_fair()
    assert len(fair) == 6366
    base = fair.iloc[:50]
    swapped = D.swap_anomalies(base, fair.iloc[100:1000], rng, [c for c in fair.columns if c not in D.META])
    changed = (swapped.drop(columns=list(D.META)).to_numpy() != base.drop(columns=list(D.META)).to_numpy()).sum(1)
    assert changed.max() <= 3 and (swapped.label == 1).all()


def test_breast_cancer_uses_every_benign_row():
    fr = _splits("breast_cancer")
    assert (fr.label == 0).sum() == 357
    assert (fr.split == "val").sum() >= D.MIN_VAL


def test_schema_kinds_and_fixed_precision():
    fr = _splits("synthetic_transactions")
    schema = D.fit_schema(fr[fr.split == "train"], ("description",))
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds == {"amount": "numeric", "hour": "numeric", "category": "categorical", "country": "categorical",
                     "merchant": "categorical", "description": "text"}
    assert schema.column("hour").decimals == 0
    rows = S.format_rows(fr, schema)
    assert all(len(r["amount"].partition(".")[2]) == schema.column("amount").decimals for r in rows)
    assert S.format_value("a, b is c d e f g h", "text", max_words=4) == "a b c d"


@pytest.mark.parametrize("name", ["synthetic_transactions", "fair", "breast_cancer"])
def test_round_trip_text_and_tokens(name):
    fr = _splits(name)
    from assets.dispat.runs import TEXT_COLUMNS

    schema = D.fit_schema(fr[fr.split == "train"], TEXT_COLUMNS.get(name, ()))
    rows = S.format_rows(fr, schema)
    rng = np.random.default_rng(0)
    orders = S.permutations(len(rows), len(schema.names), rng)
    for row, order in zip(rows[:50], orders):
        text = S.serialise(row, [schema.names[i] for i in order])
        assert S.parse(text, schema) == row
    vocab = S.fit_vocab([r for r, s in zip(rows, fr.split) if s == "train"], schema, 512)
    assert S.round_trip_rate(rows, orders, vocab, 96) == 1.0
    assert vocab.size <= 512
    # one token per digit
    assert all(len(vocab.token_text(i)) == 1 for i in vocab.encode_value("1234.5678"))
    # the serialisation round-trips through the tokenizer's JSON
    again = S.Vocab.from_json(vocab.to_json())
    assert S.round_trip_rate(rows[:20], orders[:20], again, 96) == 1.0


def test_parse_rejects_malformed_rows():
    fr = _splits("synthetic_transactions")
    schema = D.fit_schema(fr[fr.split == "train"], ("description",))
    row = S.format_rows(fr.iloc[:1], schema)[0]
    good = S.serialise(row, schema.names)
    for bad in (good.replace("amount is", "amnt is"), good + ", hour is 3", good.replace(f"amount is {row['amount']}",
                                                                                        "amount is 12x")):
        with pytest.raises(ValueError):
            S.parse(bad, schema)


def _schema_and_table():
    fr = _splits("synthetic_transactions")
    train = fr[fr.split == "train"].drop(columns=["split", "row_id"])
    return D.fit_schema(train, ("description",)), train.reset_index(drop=True)


def test_bad_tables_raise_naming_column_and_row():
    schema, table = _schema_and_table()
    t = table.copy().astype({"amount": object})
    t.loc[7, "amount"] = "twelve"
    with pytest.raises(D.TableError, match=r"numeric column 'amount' at row 7"):
        D.validate_table(t, schema)
    t = table.copy()
    t.loc[4, "country"] = np.nan
    with pytest.raises(D.TableError, match=r"missing value in column 'country' at row 4"):
        D.validate_table(t, schema)
    with pytest.raises(D.TableError, match="empty"):
        D.validate_table(table.iloc[:0], schema)
    with pytest.raises(D.TableError, match=r"missing \['merchant'\], unexpected \['shop'\]"):
        D.validate_table(table.rename(columns={"merchant": "shop"}), schema)


def test_rows_past_the_context_raise_naming_the_row():
    schema, table = _schema_and_table()
    rows = S.format_rows(table.iloc[:5], schema)
    vocab = S.fit_vocab(rows, schema, 512)
    rows[3]["amount"] = "9" * 120 + ".5"
    with pytest.raises(D.TableError, match=r"row 3: .* exceed the context of 96 \(longest value in column 'amount'"):
        S.encode_rows(rows, S.permutations(5, len(schema.names), np.random.default_rng(0)), vocab, 96)


def test_levels_outside_train_are_reported():
    schema, table = _schema_and_table()
    rows = S.format_rows(table.iloc[:5], schema)
    rows[2]["country"] = "zz"
    assert "column 'country' row 2: level 'zz'" in S.check_levels(rows, schema)[0]
    novel = D.Schema(schema.columns, {"country": ("zz",)})
    assert S.check_levels(rows, novel) == []
