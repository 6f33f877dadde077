"""Inductor's reorder_for_peak_memory, over a compiled graph's kernels.

After fusion, Inductor's scheduler tries a few topological orders of its
kernels and keeps the one of least estimated peak memory
(torch._inductor.memory: reorder_for_peak_memory over
topological_sort_lpmf, topological_sort_bfs and topological_sort_dfs, the
graph's own order first, which a tie keeps).  compiled.Program gives the
kernels here as a Graph: each kernel's output buffers and their bytes, the
buffers it reads, the graph inputs and outputs.  The estimate is
estimate_peak_memory's: the graph inputs a kernel reads live from the
start, each kernel's outputs from that kernel, every buffer up to its last
reader (or its own kernel, if none reads it), the graph's outputs to the
end.  Names and rules follow memory.py; no code of it is used here.
"""
import heapq


class Graph:
    """N kernels, numbered in the graph's order.  OUTS[k]: the buffers
    kernel k makes; READS[k]: the buffers it reads (other kernels' and
    graph inputs); SIZE: bytes of each buffer; INPUTS: the graph inputs
    read; OUTPUTS: the buffers the graph returns.  Buffers are any
    hashable names."""

    def __init__(self, outs, reads, size, inputs, outputs):
        self.n = len(outs)
        self.outs = outs
        self.size = size
        self.inputs = list(inputs)
        self.outputs = set(outputs)
        maker = {}
        for k, bs in enumerate(outs):
            for b in bs:
                maker[b] = k
        self.maker = maker
        # pred_buffers: what a kernel reads that it does not make
        known = set(self.inputs) | set(maker)
        self.reads = [[b for b in dict.fromkeys(rs)
                       if b in known and maker.get(b) != k]
                      for k, rs in enumerate(reads)]
        self.readers = {}
        for k, rs in enumerate(self.reads):
            for b in rs:
                self.readers.setdefault(b, []).append(k)
        self.pred = [sorted({maker[b] for b in rs if b in maker})
                     for rs in self.reads]
        self.succ = [[] for _ in range(self.n)]
        for k, ps in enumerate(self.pred):
            for p in ps:
                self.succ[p].append(k)
        # a kernel's bytes: its outputs' (mpi_node.size)
        self.alloc = [sum(size[b] for b in bs) for bs in outs]

    def peak(self, order):
        """estimate_peak_memory of ORDER (kernel numbers)."""
        step = {k: i for i, k in enumerate(order)}
        delta = [0] * (self.n + 1)

        def end(b, start):
            r = self.readers.get(b)
            return max(step[k] for k in r) if r else start
        for b in self.inputs:
            delta[0] += self.size[b]
            if b not in self.outputs:
                delta[end(b, -1) + 1] -= self.size[b]
        for k in order:
            for b in self.outs[k]:
                delta[step[k]] += self.size[b]
                if b not in self.outputs:
                    delta[end(b, step[k]) + 1] -= self.size[b]
        peak = cur = 0
        for d in delta:
            cur += d
            peak = max(peak, cur)
        return peak

    def lpmf(self):
        """topological_sort_lpmf: least peak memory first.  Of the kernels
        ready, the one that stays under the peak so far, then the one
        that frees the most beyond what it allocates, then the first."""
        size = self.size
        indeg = [len(p) for p in self.pred]
        left = {b: len(self.readers.get(b, ())) +
                (1 if b in self.outputs else 0)
                for b in list(self.maker) + self.inputs}
        frees = [0] * self.n
        for k in range(self.n):
            frees[k] += sum(size[b] for b in self.reads[k] if left[b] == 1)
            frees[k] += sum(size[b] for b in self.outs[k] if left[b] == 0)
        live = sum(size[b] for b in self.inputs)
        out = sum(size[b] for b in self.outputs if b in left)
        top = max(live, out)
        gap = top - live
        ready = [k for k in range(self.n) if indeg[k] == 0]
        order = []
        while ready:
            k = min(ready, key=lambda j: (
                self.alloc[j] if self.alloc[j] > gap else 0,
                self.alloc[j] - frees[j], j))
            ready.remove(k)
            order.append(k)
            live += self.alloc[k]
            top = max(top, live)
            live -= frees[k]
            gap = top - live
            for s in self.succ[k]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    ready.append(s)
            for b in self.reads[k]:
                left[b] -= 1
                if left[b] == 1:
                    for r in self.readers[b]:
                        frees[r] += size[b]
        return order

    def bfs(self):
        """topological_sort_bfs: the ready kernel whose predecessors ran
        earliest (their steps, sorted, compared as lists), then the
        first."""
        indeg = [len(p) for p in self.pred]
        at = [-1] * self.n
        heap = [([], k) for k in range(self.n) if indeg[k] == 0]
        heapq.heapify(heap)
        order = []
        while heap:
            _, k = heapq.heappop(heap)
            at[k] = len(order)
            order.append(k)
            for s in self.succ[k]:
                indeg[s] -= 1
                if indeg[s] == 0:
                    heapq.heappush(heap, (sorted({at[p] for p in self.pred[s]}),
                                          s))
        return order

    def dfs(self):
        """topological_sort_dfs: kernels by the bytes they make and read,
        each after its predecessors, visited the same way."""
        w = [self.alloc[k] + sum(self.size[b] for b in self.reads[k])
             for k in range(self.n)]
        seen, order = set(), []
        for root in sorted(range(self.n), key=lambda k: (w[k], k)):
            if root in seen:
                continue
            seen.add(root)
            stack = [(root, iter(sorted(self.pred[root],
                                        key=lambda k: (w[k], k))))]
            while stack:
                k, it = stack[-1]
                for p in it:
                    if p not in seen:
                        seen.add(p)
                        stack.append((p, iter(sorted(
                            self.pred[p], key=lambda j: (w[j], j)))))
                        break
                else:
                    stack.pop()
                    order.append(k)
        return order

    def best(self):
        """reorder_for_peak_memory: the order of least estimated peak of
        the graph's own and the three sorts (the first on a tie), or None
        where the graph's own is kept."""
        base = list(range(self.n))
        best, top = None, self.peak(base)
        for sort in (self.lpmf, self.bfs, self.dfs):
            order = sort()
            p = self.peak(order)
            if p < top:
                best, top = order, p
        return None if best == base else best
