"""Metric names, conventions and definitions."""

from __future__ import annotations

import pytest

from abeval.errors import AbevalError, OptionError
from abeval.metrics import DEFINITIONS, Conventions, parse_metric, parse_offline_metrics


@pytest.mark.parametrize(
    ("text", "name", "k"),
    [
        ("ndcg@10", "ndcg", 10),
        ("NDCG@5", "ndcg", 5),
        ("p@5", "precision", 5),
        ("hr@20", "hit_rate", 20),
        ("mrr", "mrr", None),
        ("mrr@10", "mrr", 10),
        ("ap@all", "ap", None),
        ("map@10", "map", 10),
        ("auc", "auc", None),
        ("rmse", "rmse", None),
    ],
)
def test_parse(text: str, name: str, k: int | None) -> None:
    spec = parse_metric(text)
    assert (spec.name, spec.k) == (name, k)


def test_names_without_a_cutoff_expand_over_k() -> None:
    specs = parse_offline_metrics("precision,ndcg,mrr,ndcg@5", ks=[5, 10])
    assert [s.label for s in specs] == ["precision@5", "precision@10", "ndcg", "mrr", "ndcg@5"]


def test_misspelt_metric_suggests_the_closest() -> None:
    with pytest.raises(OptionError) as err:
        parse_metric("ndgc@10")
    assert (err.value.parameter, err.value.value) == ("metrics", "ndgc@10")
    assert err.value.reason.startswith("unknown metric 'ndgc@10'; did you mean ndcg@10")
    assert "ndcg" in (err.value.allowed or ())
    with pytest.raises(OptionError) as err:
        parse_metric("precison@5")
    assert "did you mean precision@5" in err.value.reason


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("precision", "--metrics 'precision': needs a cutoff; write precision@10 (or another K)"),
        ("auc@10", "--metrics 'auc@10': auc takes no cutoff; write auc"),
        ("ndcg@0", "--metrics 'ndcg@0': the cutoff must be at least 1, as in ndcg@10"),
    ],
)
def test_cutoff_rules(text: str, message: str) -> None:
    with pytest.raises(OptionError) as err:
        parse_metric(text)
    assert err.value.line("--metrics") == message


def test_conventions_are_validated_and_printed() -> None:
    with pytest.raises(AbevalError, match="unknown gain convention 'log'"):
        Conventions(gain="log")  # type: ignore[arg-type]
    spec = parse_metric("ap@10", Conventions(ap_denominator="min_rk"))
    assert spec.convention["ap_denominator"] == "min_rk"
    assert spec.convention["cutoff"] == "10"
    assert "gain" not in spec.convention
    assert parse_metric("ndcg@10", Conventions(gain="exp2")).convention["gain"] == "exp2"


def test_every_definition_documents_formula_and_reference() -> None:
    assert set(DEFINITIONS) == {
        "precision", "recall", "hit_rate", "mrr", "ap", "map", "ndcg", "rprec", "bpref", "auc",
        "coverage",
        "gini", "entropy", "novelty", "diversity", "serendipity", "rmse", "mae",
    }  # fmt: skip
    for d in DEFINITIONS.values():
        assert d.formula and d.reference
        assert d.reference.split(";")[0].split()[0] in d.doc, d.name
        assert d.kind != "ranking" or d.per_list is not None
        assert d.kind != "beyond" or (d.group_sql or d.shared_group_sql or d.exposure_sql)
        assert d.kind != "rating" or d.rating_sql
