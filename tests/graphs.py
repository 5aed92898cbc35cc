# SPDX-License-Identifier: BSD-2-Clause
"""graphs.py - the strongly connected components of a directed graph, for
the two circle checks: tests/check-cycles.py (includes between modules and
folders) and tests/check-calls.py (calls between object files)."""


def components(g):
    """The strongly connected components of g (a dict: node -> iterable of
    nodes) with more than one node, each sorted, in the order Tarjan's
    algorithm closes them; nodes and edges are visited in sorted order, so
    the answer does not depend on dict order. Iterative (an explicit stack
    of iterators): a long chain does not reach Python's recursion limit."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def enter(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        return (v, iter(sorted(g.get(v, ()))))

    for root in sorted(g):
        if root in index:
            continue
        work = [enter(root)]
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    work.append(enter(nxt))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found
