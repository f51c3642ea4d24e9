"""The parent's per-instance clock: coalesced progress marks are charged conservatively."""

from hifo.sandbox._marks import Marks, instance_seconds


def test_separate_reads_give_the_gaps_between_arrivals():
    assert instance_seconds([1.0, 1.5, 3.0], [0.0, 1.0, 1.5]) == [0.5, 1.5]


def test_marks_read_together_charge_the_whole_window_not_zero():
    # begin read at 1.0 (previous read 0.2); two instance marks read together at 4.0 (previous read 1.0)
    secs = instance_seconds([1.0, 4.0, 4.0], [0.2, 1.0, 1.0])
    assert secs == [3.0, 3.0]  # the second instance is not free: it gets the window 1.0 .. 4.0


def test_one_chunk_with_every_mark_is_charged_from_the_read_before_it():
    m = Marks()
    m.take(bytearray([Marks.BEGIN, Marks.INSTANCE, Marks.INSTANCE]) + b"{")
    assert m.done and len(m.times) == 3 and len(set(m.times)) == 1
    secs = instance_seconds(m.times, m.since)
    assert len(secs) == 2 and all(t > 0 for t in secs)
