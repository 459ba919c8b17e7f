"""The validation split carved from train (issue 15: held-out tasks never steer a choice)."""

from sdk.tasks.records import Message, ReferenceOnly, Source, Split, Task, UnitTestVerifier
from sdk.train.validation import carve_validation, validation_record


def task(i: int, verifiable: bool = True) -> Task:
    verifier = UnitTestVerifier(tests={"test_x.py": f"def test_{i}():\n    assert True\n"}) if verifiable \
        else ReferenceOnly()
    return Task(domain="d", prompt=(Message(role="user", content=f"task {i}"),), verifier=verifier,
                source=Source(connector="t"), reference="x = 1", split=Split.TRAIN)


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


def test_validation_record_names_what_it_steered():
    fit, val = carve_validation([task(i) for i in range(50)], 0.3)
    rec = validation_record(0.3, fit, val, ["early stopping (rl.heldout)"], "validation")
    assert rec["validation_tasks"] == len(val) and rec["train_tasks"] == len(fit) and rec["probe_split"] == "validation"
