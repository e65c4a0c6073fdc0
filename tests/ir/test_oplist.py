"""OpList: the linked list of a block's ops (O(1) insert/erase, in-order iteration)."""

from __future__ import annotations

import pytest

from oxla.ir import Block, Operation
from oxla.ir import types as T


def _ops(n: int) -> list[Operation]:
    return [Operation.create(f"test.op{i}") for i in range(n)]


def _names(block: Block) -> list[str]:
    return [op.name for op in block.ops]


def test_append_insert_remove_keep_order_and_parent():
    b = Block()
    a, c, d, e = _ops(4)
    b.append(a)
    b.append(d)
    b.insert_before(d, c)
    b.insert_after(d, e)
    assert _names(b) == ["test.op0", "test.op1", "test.op2", "test.op3"]
    assert len(b.ops) == 4 and b.ops[0] is a and b.ops[-1] is e and b.terminator is e
    assert b.ops[1] is c and b.ops[2] is d and b.ops[-2] is d
    assert [b.ops.index(o) for o in (a, c, d, e)] == [0, 1, 2, 3]
    assert b.ops.is_before(c, d) and not b.ops.is_before(e, a)
    c.erase()
    assert c.parent is None and _names(b) == ["test.op0", "test.op2", "test.op3"]
    assert b.ops.index(e) == 2
    assert [o.name for o in reversed(b.ops)] == ["test.op3", "test.op2", "test.op0"]
    assert b.ops[:-1] == [a, d]
    with pytest.raises(ValueError):
        b.ops.remove(c)
    with pytest.raises(IndexError):
        b.ops[3]


def test_iteration_survives_erasing_the_current_op():
    b = Block()
    ops = _ops(6)
    for op in ops:
        b.append(op)
    seen = []
    for op in b.ops:
        seen.append(op.name)
        if op.name in ("test.op1", "test.op2", "test.op5"):
            op.erase()
    assert seen == [f"test.op{i}" for i in range(6)]
    assert _names(b) == ["test.op0", "test.op3", "test.op4"]


def test_append_moves_an_op_between_blocks_and_slice_assign_replaces():
    b1, b2 = Block(), Block()
    x, y = _ops(2)
    b1.append(x)
    b1.append(y)
    b2.append(x)
    assert x.parent is b2 and _names(b1) == ["test.op1"] and _names(b2) == ["test.op0"]
    b1.ops[:] = [x, y]
    assert _names(b1) == ["test.op0", "test.op1"] and not b2.ops and x.parent is b1


def test_set_operand_and_erase_update_use_lists():
    b = Block([T.TensorType((2,), T.FloatType("f32"))] * 2)
    p, q = b.args
    add = b.append(Operation.create("test.add", [p, p], [p.type]))
    assert len(p.uses) == 2 and not q.uses
    add.set_operand(1, q)
    assert [u.index for u in p.uses] == [0] and [u.index for u in q.uses] == [1]
    p.replace_all_uses_with(q)
    assert not p.uses and sorted(u.index for u in q.uses) == [0, 1]
    add.erase()
    assert not q.uses and not b.ops


def test_assigning_a_list_to_block_ops_rebuilds_the_oplist():
    b = Block()
    x, y, z = _ops(3)
    b.append(x)
    b.ops = [z, y]
    assert _names(b) == ["test.op2", "test.op1"] and x.parent is None and z.parent is b
    assert b.terminator is y and b.ops.index(y) == 1
