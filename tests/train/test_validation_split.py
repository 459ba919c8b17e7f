"""The validation split carved from train (issue 15: held-out tasks never steer a choice)."""

from sdk.tasks.records import (
    Message,
    ReferenceOnly,
    Source,
    Split,
    Task,
    UnitTestVerifier,
)
from sdk.train.validation import carve_validation, validation_record


def task(i: int, verifiable: bool = True, prompt: str = "task", domain: str = "d") -> Task:
    verifier = UnitTestVerifier(tests={"test_x.py": f"def test_{i}():\n    assert True\n"}) if verifiable \
        else ReferenceOnly()
    return Task(domain=domain, prompt=(Message(role="user", content=f"{prompt} {i}"),), verifier=verifier,
                source=Source(connector="t"), reference=f"def f(x):\n    return x + {i}\n", split=Split.TRAIN)


def test_carve_is_seeded_order_free_and_verifiable_only():
    train = [task(i) for i in range(200)] + [task(1000 + i, verifiable=False) for i in range(20)]
    fit, val = carve_validation(train, 0.2, seed=0)
    assert 25 <= len(val) <= 55 and len(fit) + len(val) == len(train)
    assert all(t.verifier.kind != "reference" for t in val), "a reference-only task cannot validate anything"
    assert {t.id for t in fit}.isdisjoint({t.id for t in val})
    again = carve_validation(list(reversed(train)), 0.2, seed=0)[1]
    assert {t.id for t in again} == {t.id for t in val}, "the same tasks whatever the order"
    assert {t.id for t in carve_validation(train, 0.2, seed=1)[1]} != {t.id for t in val}
    assert carve_validation(train, 0.0) == (train, [])


def test_carve_follows_the_logic_not_the_prompt():
    """Repository context on or off changes every prompt (and task id), not which tasks validate:
    two prompt formats must be compared as arms trained on the same fit set."""
    plain = [task(i) for i in range(100)]
    shown = [task(i, prompt="From the repository: Money(cents: int) ... task") for i in range(100)]
    assert {t.id for t in plain}.isdisjoint({t.id for t in shown})
    names = lambda tasks: {t.prompt[0].content.rsplit(" ", 1)[1] for t in tasks}
    assert names(carve_validation(plain, 0.2)[1]) == names(carve_validation(shown, 0.2)[1])
    assert carve_validation(plain, 0.2)[1], "a split this size carves some tasks"


def test_carve_takes_the_same_share_of_every_top_level_domain():
    """A threshold on the hash let chance take a third of a small domain (the quickstart's general pool);
    each top-level domain now gives round(fraction × n) of its verifiable tasks, sub-domains pooled."""
    train = ([task(i, domain=f"acme/m{i % 7}") for i in range(63)] + [task(100 + i, domain="general") for i in range(28)]
             + [task(200 + i, verifiable=False, domain="general") for i in range(5)])
    fit, val = carve_validation(train, 0.15, seed=3)
    tops = [t.domain.split("/")[0] for t in val]
    assert tops.count("acme") == 9 and tops.count("general") == 4 and len(fit) + len(val) == len(train)


def test_validation_record_names_what_it_steered():
    fit, val = carve_validation([task(i) for i in range(50)], 0.3)
    rec = validation_record(0.3, fit, val, ["early stopping (rl.heldout)"], "validation")
    assert rec["validation_tasks"] == len(val) and rec["train_tasks"] == len(fit) and rec["probe_split"] == "validation"
