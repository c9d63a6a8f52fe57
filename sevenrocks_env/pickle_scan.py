"""How big a pickle's objects would be, measured on its opcodes before anything is unpickled.

A pickle's memo lets one object be referenced many times, so a few hundred bytes can describe
a tuple of depth 40 whose two items are the same tuple: ``torch.load(weights_only=True)``
builds it in no time, but hashing it (as a dict key) or printing it visits 2**40 leaves, and a
dict of tensors referenced 1000 times becomes 1000 copies when a caller deep-copies the
result.  :func:`expanded_size` runs the pickle's stack machine on sizes instead of objects: each
object counts itself plus what it holds, a memo reference counts the whole object again (and a
container filled after it was referenced -- a cycle, or shared lists filled top down, whose
final size the count could not see -- is refused).  A pickle written by ``torch.save`` of plain
dicts, lists and tensors references only strings, globals and the occasional shared object
again, so its expanded size stays below its number of opcodes; ``policy_file.read_checkpoint``
refuses one past twice its bytes.
"""

from __future__ import annotations

import pickletools

#: Opcodes that add to an object already on the stack (the one below their arguments).
_MUTATORS = frozenset({"APPEND", "APPENDS", "SETITEM", "SETITEMS", "ADDITEMS", "BUILD"})
_GETS = frozenset({"GET", "BINGET", "LONG_BINGET"})
_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_MARK = object()


class PickleExpansionError(ValueError):
    """A pickle whose objects, fully expanded, would be far larger than the pickle."""


#: Deepest nesting of objects a scanned pickle may build (``torch.save`` of a checkpoint nests
#: about 10 deep): a chain of 200,000 one-item tuples is 200 kB, and hashing it as a dict key
#: overflows the C stack inside the unpickler (a segmentation fault, not an exception).
MAX_DEPTH = 200


class _Node:
    __slots__ = ("size", "shared", "depth")

    def __init__(self, size: int, depth: int = 1):
        self.size = size
        self.shared = False  # referenced again (memo or DUP): its size was counted elsewhere
        self.depth = depth   # how deep the objects it holds nest, itself included


def _pop_to_mark(stack: list) -> list:
    items = []
    while stack:
        item = stack.pop()
        if item is _MARK:
            return items
        items.append(item)
    raise PickleExpansionError("malformed pickle: no mark on the stack")


def _deepest(nodes: list) -> int:
    return max((node.depth for node in nodes if node is not _MARK), default=0)


def expanded_size(data: bytes, limit: int) -> tuple[int, int]:
    """``(opcodes, expanded size)`` of the pickle ``data``; raises :class:`PickleExpansionError`
    as soon as one object's expanded size passes ``limit`` (so the sizes stay small ints), or
    objects nest deeper than :data:`MAX_DEPTH`."""
    stack: list = []
    memo: dict = {}
    count = 0
    try:
        for opcode, arg, _ in pickletools.genops(data):
            count += 1
            name = opcode.name
            if name == "MARK":
                stack.append(_MARK)
            elif name in _GETS:
                memo[arg].shared = True  # (a memoized mark has no such field: malformed)
                stack.append(memo[arg])
            elif name in _PUTS:
                memo[arg] = stack[-1]
            elif name == "MEMOIZE":
                memo[len(memo)] = stack[-1]
            elif name == "DUP":
                stack[-1].shared = True
                stack.append(stack[-1])
            elif name == "STOP":
                break
            else:
                marked = pickletools.markobject in opcode.stack_before
                popped = _pop_to_mark(stack) if marked else []
                below = len(opcode.stack_before) - (2 if marked else 0)
                for _ in range(below):
                    popped.append(stack.pop())
                size = sum(node.size for node in popped if node is not _MARK)
                if name in _MUTATORS:  # the container is the deepest item popped, and grows
                    node = popped[-1]
                    if node.shared:  # torch.save fills a container before it refers to it again
                        raise PickleExpansionError(
                            "a container is filled after being referenced (a cycle, or shared "
                            "lists filled top down: sizes the scan could not count)")
                    node.size = min(size, limit + 1)
                    node.depth = max(node.depth, 1 + _deepest(popped[:-1]))
                    stack.append(node)
                else:
                    node = _Node(min(size + 1, limit + 1), 1 + _deepest(popped))
                    stack.extend([node] * len(opcode.stack_after))
                if node.depth > MAX_DEPTH:
                    raise PickleExpansionError(
                        f"objects nested more than {MAX_DEPTH} deep (reading them would "
                        "overflow the interpreter's stack)")
                if node.size > limit:
                    raise PickleExpansionError(
                        f"one object would expand to more than {limit:,} items (a small pickle "
                        "referencing the same objects over and over)")
    except PickleExpansionError:
        raise
    except (ValueError, KeyError, IndexError, AttributeError) as error:  # a mark used as a value
        raise PickleExpansionError(f"malformed pickle: {type(error).__name__}") from None
    return count, (stack[-1].size if stack and stack[-1] is not _MARK else 0)
