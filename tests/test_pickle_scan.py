"""The pickle scan (``sevenrocks_env.pickle_scan``) counts what unpickling would build, before
anything is unpickled: exactly the number of values for plain data, and far more than the
pickle's size for memo-shared structures."""

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sevenrocks_env.pickle_scan import PickleExpansionError, expanded_size

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=5))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.tuples(inner, inner),
    st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=30)


def count(value) -> int:
    """Values unpickling ``value`` builds, a shared one once per reference."""
    if isinstance(value, dict):
        return 1 + sum(count(k) + count(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return 1 + sum(count(item) for item in value)
    return 1


@settings(max_examples=200, deadline=None)
@given(values, st.sampled_from([2, 4, 5]))
def test_plain_data_counts_each_value_once(value, protocol):
    data = pickle.dumps(value, protocol=protocol)
    assert expanded_size(data, 10**6)[1] == count(value)


def test_shared_structures_count_every_reference_and_stop_at_the_limit():
    shared: list = [1, 2]
    assert expanded_size(pickle.dumps([shared] * 10, protocol=2), 10**6)[1] == 1 + 10 * 3
    dag: list = []
    for _ in range(60):  # 2**60 values from a few hundred bytes
        dag = [dag, dag]
    with pytest.raises(PickleExpansionError, match="expand"):
        expanded_size(pickle.dumps(dag, protocol=2), 10**6)


@pytest.mark.parametrize("data", [b"", b"\x80\x02", b"\x80\x02j\x05\x00\x00\x00.", b"((",
                                  b"\x80\x02K\x01t."])  # TUPLE with no MARK
def test_malformed_pickles_are_refused(data):
    with pytest.raises(PickleExpansionError, match="malformed"):
        expanded_size(data, 1000)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64), st.sampled_from([b"", b"\x80\x02", b"\x80\x02(", b"\x80\x02]q\x00("]))
def test_any_bytes_are_measured_or_refused_in_words(data, prefix):
    """Any bytes give ``(opcodes, size)`` (ints, at least one opcode read, the size within the
    limit) or a one-line PickleExpansionError of a few words; never another exception."""
    try:
        opcodes, size = expanded_size(prefix + data, 1000)
    except PickleExpansionError as error:
        message = str(error)
        assert message and "\n" not in message and len(message) < 300, message
    else:
        assert type(opcodes) is int and type(size) is int
        assert 1 <= opcodes <= len(prefix + data) and 0 <= size <= 1000


def test_a_mark_used_as_a_value_is_malformed():
    with pytest.raises(PickleExpansionError, match="malformed"):
        expanded_size(b"\x80\x02((a.", 1000)  # MARK, MARK, APPEND: a mark where the list is


def _frame(count: int) -> bytes:
    import struct
    return struct.pack("<I", count)


def test_containers_filled_after_being_referenced_are_refused():
    """A cycle, and lists filled top down (L_i.extend([L_(i-1)] * 2) after each L_i was
    referenced): their sizes are not known when they are referenced, so they are refused."""
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(PickleExpansionError, match="filled after being referenced"):
        expanded_size(pickle.dumps(cycle, protocol=2), 10**6)
    n = 40  # 2**40 items once built, ~700 bytes of pickle
    data = bytearray(b"\x80\x02]r" + _frame(0))                      # junk = []
    for i in range(1, n + 1):
        data += b"]r" + _frame(i) + b"a"                               # junk.append(L_i = [])
    for i in range(n, 1, -1):                                          # L_i.extend([L_i-1] * 2)
        data += b"j" + _frame(i) + b"(j" + _frame(i - 1) + b"j" + _frame(i - 1) + b"e0"
    data += b"."
    with pytest.raises(PickleExpansionError, match="filled after being referenced"):
        expanded_size(bytes(data), 10**6)


def test_nesting_deeper_than_the_bound_is_refused():
    """Depth, not size: a chain of one-item tuples is as many items as bytes, but hashing or
    printing it recurses once a level (200,000 levels overflowed the C stack)."""
    from sevenrocks_env.pickle_scan import MAX_DEPTH
    value: object = ()
    for _ in range(MAX_DEPTH - 1):
        value = (value,)
    expanded_size(pickle.dumps(value, protocol=2), 10**6)    # the bound itself passes
    with pytest.raises(PickleExpansionError, match="nested more than"):
        expanded_size(pickle.dumps((value,), protocol=2), 10**6)
    nested: object = []   # lists filled by APPEND nest as deep as tuples
    for _ in range(MAX_DEPTH):
        nested = [nested]
    with pytest.raises(PickleExpansionError, match="nested more than"):
        expanded_size(pickle.dumps(nested, protocol=2), 10**6)


def _hash_bomb(depth: int) -> bytes:
    """A tuple of ``depth`` levels whose two items are the same tuple, by LONG_BINGET memo
    references: ~10 bytes a level, 3 * 2**depth - 1 values once built (hashing visits all)."""
    data, memo = bytearray(b"\x80\x02K\x00\x85r" + _frame(10**5)), 10**5   # (0,), LONG_BINPUT
    for _ in range(depth):
        get = b"j" + _frame(memo)                                          # LONG_BINGET
        memo += 1
        data += get + get + b"\x86r" + _frame(memo)                        # TUPLE2, LONG_BINPUT
    return bytes(data + b".")


def test_memo_references_count_the_whole_object_each_time():
    """The pattern of the hash bomb in test_hostile_checkpoints_pickles.py, measured directly
    (there, a scan that missed it would hang for hours hashing the key instead of failing)."""
    for depth in (0, 1, 10):
        assert expanded_size(_hash_bomb(depth), 10**6)[1] == 3 * 2 ** depth - 1
    with pytest.raises(PickleExpansionError, match="would expand to more than 1,000,000 items"):
        expanded_size(_hash_bomb(40), 10**6)


def test_a_set_counts_each_item_once_and_a_shared_one_filled_later_is_refused():
    """Sets (ADDITEMS, protocol 4; the safe loader builds them) grow the set already on the
    stack, as APPENDS grows a list: counted once each, and refused when filled after being
    referenced."""
    assert expanded_size(pickle.dumps({1, 2}, protocol=4), 1000)[1] == 3
    assert expanded_size(pickle.dumps([{1, 2}, {3}], protocol=4), 1000)[1] == 1 + 3 + 2
    shared_then_filled = b"\x80\x04\x8f\x94h\x00(K\x01\x90."  # s = set(); [s ref]; s |= {1}
    with pytest.raises(PickleExpansionError, match="filled after being referenced"):
        expanded_size(shared_then_filled, 1000)


def test_an_object_built_after_being_referenced_is_refused():
    """BUILD sets an object's state (an OrderedDict's attributes, say): one referenced before
    gets a state the count of those references never saw."""
    built_after = b"\x80\x02}q\x00h\x00}K\x01K\x02sb."  # d = {}; [d ref]; BUILD d with {1: 2}
    with pytest.raises(PickleExpansionError, match="filled after being referenced"):
        expanded_size(built_after, 1000)
    assert expanded_size(b"\x80\x02}}K\x01K\x02sb.", 1000)[1] == 4   # built first: counted


def test_a_copy_made_by_dup_counts_as_a_reference():
    """DUP is a second reference, as a memo get is: filling the object afterwards is refused."""
    with pytest.raises(PickleExpansionError, match="filled after being referenced"):
        expanded_size(b"\x80\x02]2K\x01a.", 1000)  # L = []; DUP; L.append(1)


def test_an_object_of_exactly_the_limit_passes():
    """The limit is the most an object may expand to, itself allowed."""
    assert expanded_size(_hash_bomb(1), 5)[1] == 5
    with pytest.raises(PickleExpansionError, match="more than 4 items"):
        expanded_size(_hash_bomb(1), 4)


def test_an_object_popped_off_the_stack_is_not_the_result():
    assert expanded_size(b"\x80\x02]]K\x01a0.", 1000)[1] == 1      # [], [1], POP: the first
    assert expanded_size(b"\x80\x02](K\x01K\x021.", 1000)[1] == 1   # POP_MARK drops 1 and 2
