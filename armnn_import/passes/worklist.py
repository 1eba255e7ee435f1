"""The worklists of passes.layout.sink_permutes: the graph's order as a linked list with
labels (Order), and a scan standing for one pass over the graph in that order (Scan)."""
from __future__ import annotations

import heapq

from ..ir.graph import Graph, Layer


class Order:
    """The graph's order during sink_permutes: a linked list with float labels
    (relabelled when two get too close), so "is A before B" and "put X before B"
    cost O(1)."""

    def __init__(self, layers):
        self.label = {l: float(i) for i, l in enumerate(layers)}
        self.prev = {l: (layers[i - 1] if i else None) for i, l in enumerate(layers)}
        self.next = {l: (layers[i + 1] if i + 1 < len(layers) else None) for i, l in enumerate(layers)}
        self.first = layers[0] if layers else None
        self.last = layers[-1] if layers else None
        self.version = 0  # bumped by a relabel: the scans rebuild their heaps

    def append(self, layer) -> None:
        self.label[layer] = (self.label[self.last] + 1.0) if self.last is not None else 0.0
        self.prev[layer], self.next[layer] = self.last, None
        if self.last is not None:
            self.next[self.last] = layer
        else:
            self.first = layer
        self.last = layer

    def _unlink(self, layer) -> None:
        p, n = self.prev[layer], self.next[layer]
        if p is not None:
            self.next[p] = n
        else:
            self.first = n
        if n is not None:
            self.prev[n] = p
        else:
            self.last = p

    def place_before_first_user(self, layer, graph: Graph) -> None:
        """toposort() of an order that is topological but for `layer`, appended at the
        end: it moves to just before its first reader (and stays if it has none)."""
        users = [u for u, _ in graph.consumers(layer)]
        if not users:
            return
        m = min(users, key=self.label.__getitem__)
        if self.label[m] > self.label[layer]:
            return  # already before its readers
        self._unlink(layer)
        p = self.prev[m]
        lo = self.label[p] if p is not None else self.label[m] - 1.0
        if self.label[m] - lo < 1e-6:
            self._relabel()
            lo = self.label[p] if p is not None else self.label[m] - 1.0
        self.label[layer] = (lo + self.label[m]) / 2
        self.prev[layer], self.next[layer] = p, m
        self.prev[m] = layer
        if p is not None:
            self.next[p] = layer
        else:
            self.first = layer

    def _relabel(self) -> None:
        i, l = 0, self.first
        while l is not None:
            self.label[l] = float(i)
            i, l = i + 1, self.next[l]
        self.version += 1

    def walk(self, graph: Graph) -> list[Layer]:
        out, l = [], self.first
        while l is not None:
            if l in graph:
                out.append(l)
            l = self.next[l]
        return out


class Scan:
    """A worklist standing for one pass over the whole graph in order: it holds
    every layer at which the pass may act (all at first, then those whose
    connections, descriptor or outputs changed), and visits them by position.
    A layer that changes at or before the running visit waits for the next
    pass, one after it is still visited in this one: as a full scan does."""

    def __init__(self, order: Order, wants=None):
        self.order = order
        self.wants = wants  # layer -> False: the step cannot act there (not queued)
        self.pending: set = set()
        self.heap: list = []
        self.deferred: list = []
        self.pos = None  # label of the layer being visited, during run()
        self.seq = 0
        self.version = order.version

    def add(self, layer) -> None:
        if layer in self.pending or (self.wants is not None and not self.wants(layer)):
            return
        self.enqueue(layer)

    def enqueue(self, layer) -> None:
        """add() of a layer known to be wanted and not pending."""
        self.pending.add(layer)
        lab = self.order.label[layer]
        if self.pos is not None and lab <= self.pos:
            self.deferred.append(layer)
        else:
            self._push(layer, lab)

    def _push(self, layer, lab) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (lab, self.seq, layer))

    def run(self, graph: Graph, step, stop_at_first: bool = False):
        """Visit the pending layers in order. step(layer) -> True: with stop_at_first,
        it acted (stop and return the layer); otherwise, keep the layer pending."""
        if self.version != self.order.version:  # labels changed: re-sort what is pending
            self.version = self.order.version
            self.heap = []
            for l in self.pending:
                self._push(l, self.order.label[l])
        hit = None
        try:
            while self.heap:
                lab, _, layer = self.heap[0]
                if layer not in self.pending or self.order.label.get(layer) != lab:
                    heapq.heappop(self.heap)  # stale: visited already, or moved (pushed again)
                    continue
                heapq.heappop(self.heap)
                self.pending.discard(layer)
                if layer not in graph:
                    continue
                self.pos = lab
                if step(layer):
                    if stop_at_first:
                        hit = layer
                        break
                    if layer not in self.pending:
                        self.pending.add(layer)
                        self.deferred.append(layer)
        finally:
            self.pos = None
            for l in self.deferred:
                if l in self.pending:
                    self._push(l, self.order.label[l])
            self.deferred = []
        return hit
