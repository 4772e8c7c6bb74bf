"""Every portal process (web, workers, the CLI: whatever runs django.setup) collects the garbage collector's
youngest generation every GC_YOUNG_THRESHOLD net allocations (portal.gc_tuning), bounded to 700..1,000,000."""

from __future__ import annotations

import gc
import os
import weakref

import pytest

from portal import gc_tuning
from tests.devstack import manage

SHOW = "import gc; print(gc.get_threshold())"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        (None, "(10000, 10, 10)"),
        ("50000", "(50000, 10, 10)"),
        ("5", "(700, 10, 10)"),
        ("10000000", "(1000000, 10, 10)"),
    ],
)
def test_a_process_starts_with_the_young_threshold_it_is_given(setting, expected):
    env = {k: v for k, v in os.environ.items() if k != "GC_YOUNG_THRESHOLD"}
    env["DEBUG"] = "true"
    if setting is not None:
        env["GC_YOUNG_THRESHOLD"] = setting
    done = manage(env, "shell", "-c", SHOW)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == expected


# Settling (portal.gc_tuning.settle): after a request or task that filled a long-lived cache, the survivors are
# frozen, so later full collections skip them; every FULL_EVERY-th settle (the first too) collects the frozen ones.


@pytest.fixture
def fresh_settling(monkeypatch):
    monkeypatch.setattr(gc_tuning, "_due", False)
    monkeypatch.setattr(gc_tuning, "_settled_at", None)
    monkeypatch.setattr(gc_tuning, "_settles", 0)
    gc.unfreeze()  # an earlier test's requests in this process may have settled already
    yield
    gc.unfreeze()  # the test process's heap goes back to the collector


class Cyclic:
    """A value with a reference cycle (the trees hold none; a request's objects and module state do): only the
    collector frees it, so only a full settle frees it once frozen."""

    def __init__(self):
        self.me = self


def test_nothing_is_frozen_until_a_long_lived_cache_asks(fresh_settling):
    assert not gc_tuning.settle_if_due(10)
    assert gc.get_freeze_count() == 0
    gc_tuning.settle_soon()
    assert gc_tuning.settle_if_due(10)
    assert gc.get_freeze_count() > 0
    assert not gc_tuning.settle_if_due(10)  # nothing new asked


def test_a_settle_waits_for_the_interval_and_zero_turns_it_off(fresh_settling, monkeypatch):
    gc_tuning.settle_soon()
    assert not gc_tuning.settle_if_due(0)
    assert gc.get_freeze_count() == 0
    assert gc_tuning.settle_if_due(10)
    gc_tuning.settle_soon()
    assert not gc_tuning.settle_if_due(10)  # asked again within the interval: it waits
    monkeypatch.setattr(gc_tuning, "_settled_at", gc_tuning._settled_at - 10)
    assert gc_tuning.settle_if_due(10)  # and settles once the interval has passed


def test_a_settle_leaves_the_young_garbage_out_and_a_full_one_collects_what_was_frozen(fresh_settling):
    cache = {"trees": Cyclic()}
    replaced = weakref.ref(cache["trees"])
    gc_tuning.settle(full=True)
    cache["trees"] = Cyclic()  # the refill
    gc.collect()
    assert replaced() is not None  # frozen: the collector does not see it
    dropped = Cyclic()
    young = weakref.ref(dropped)
    del dropped
    gc_tuning.settle(full=False)
    assert young() is None  # the request's own cyclic garbage was collected, not frozen
    assert replaced() is not None  # a settle of the young generations leaves the frozen as they are
    gc_tuning.settle(full=True)
    assert replaced() is None
    assert cache["trees"].me is cache["trees"]


def test_the_first_settle_and_every_full_every_th_are_full(fresh_settling, monkeypatch):
    monkeypatch.setattr(gc_tuning, "FULL_EVERY", 3)
    fulls = []
    for _ in range(7):
        frozen = Cyclic()
        gone = weakref.ref(frozen)
        gc.freeze()  # as an earlier settle would have
        del frozen
        gc_tuning.settle_soon()
        monkeypatch.setattr(gc_tuning, "_settled_at", None)  # past the interval
        assert gc_tuning.settle_if_due(10)
        fulls.append(gone() is None)  # only a full settle collects what was frozen
    assert fulls == [True, False, False, True, False, False, True]


@pytest.mark.django_db(transaction=True)  # outside a transaction: inside one, nothing is cached
def test_a_request_that_fills_a_long_lived_cache_settles_after_it(fresh_settling, settings):
    """Through the wiring: an EpochCache marked long-lived (as quotas.services.state's trees) asks when it fills;
    Django's request_finished (connected in portal.apps) settles; a plain cache (tokens, rules) never asks."""
    from django.core.signals import request_finished

    from access import epoch

    settings.GC_SETTLE_SECONDS = 10
    epoch.bump(epoch.ACCESS)  # the epoch row the caches key on
    plain, long_lived = epoch.EpochCache(), epoch.EpochCache(long_lived=True)
    plain.lookup("token", Cyclic)
    request_finished.send(sender=None)
    assert gc.get_freeze_count() == 0
    value = long_lived.lookup("trees", Cyclic)
    assert long_lived.lookup("trees", Cyclic) is value  # cached
    request_finished.send(sender=None)
    assert gc.get_freeze_count() > 0
    assert not gc_tuning._due
