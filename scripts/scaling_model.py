"""The model behind scripts/predict_scaling.py: a data-parallel step replayed at N ranks as
cnnbench runs it. Gradients become ready tensor by tensor during backward, are packed into buckets
(Horovod's rule, as comm/bucket_plan.cc applies it), one communication thread reduces the buckets
in order as they fill, each an alpha-beta cost of a ring or tree allreduce (within and between
hosts, flat or hierarchical; PowerSGD's two allreduces per bucket), and the optimizer updates each
bucket once it is back, at the end of the step or in the next forward pass. No file is read
here: predict_scaling.py calibrates the 1-rank step (its Step: forward, backward, update and
whole-step seconds, each gradient tensor's size and ready time, each forward layer's seconds and
tensors) and the links, and prints the predictions."""
import math


class Link:
    """alpha (s per message step) and beta (s per byte) of one link."""

    def __init__(self, alpha, beta):
        self.alpha, self.beta = alpha, beta

    def allreduce(self, algorithm, ranks, nbytes):
        if ranks <= 1:
            return 0.0
        if algorithm == "ring":
            return 2 * (ranks - 1) * self.alpha + 2 * (ranks - 1) / ranks * nbytes * self.beta
        steps = math.ceil(math.log2(ranks))
        return 2 * steps * self.alpha + 2 * nbytes * self.beta


def plan_buckets(tensors, threshold_bytes, bucket_of=None, first_layers_bytes=0):
    """Horovod's rule as comm/bucket_plan.cc applies it: fill in backward order up to the threshold;
    with first_layers_bytes (--first_layers_bucket_mb), fill from the input side instead, the first
    layers' bucket at most that size and each next one twice the one before, up to the threshold.
    Buckets in backward order; bucket_of, if given, receives each tensor's bucket index."""
    from_input = threshold_bytes > 0 and first_layers_bytes > 0
    limit = min(first_layers_bytes, threshold_bytes) if from_input else threshold_bytes
    order = range(len(tensors) - 1, -1, -1) if from_input else range(len(tensors))
    groups = []  # [elements, [tensor indices]] in planning order
    for i in order:
        elements = tensors[i][0]
        if groups and limit > 0 and (groups[-1][0] + elements) * 4 <= limit:
            groups[-1][0] += elements
            groups[-1][1].append(i)
        else:
            if from_input and groups:
                limit = min(2 * limit, threshold_bytes)
            groups.append([elements, [i]])
    if from_input:
        groups.reverse()
    buckets = []  # [elements, ready time, [(elements, rows) of its tensors]]
    owner = [0] * len(tensors)
    for b, (elements, members) in enumerate(groups):
        members = sorted(members)  # backward order: the last is ready last
        buckets.append([elements, tensors[members[-1]][1], [(tensors[i][0], tensors[i][2]) for i in members]])
        for i in members:
            owner[i] = b
    if bucket_of is not None:
        bucket_of.extend(owner)
    return buckets


def powersgd_messages(tensors, rank):
    """Elements of PowerSGD's two allreduces for one bucket (comm/powersgd.cc): the whole tensors
    with the P factors, then the Q factors; and the elements of its compressed matrices."""
    first = second = compressed = 0
    for elements, rows in tensors:
        cols = elements // rows if rows else 0
        r = min(rows, cols, rank)
        if rows and (rows + cols) * r * 2 < elements:
            first += rows * r
            second += cols * r
            compressed += elements
        else:
            first += elements
    return first, second, compressed


class Hosts:
    """How ranks sit on hosts: ranks_per_host R, the link between ranks of a host, and whether
    the allreduce is hierarchical. R = 1 (no local link): every rank its own host."""

    def __init__(self, ranks_per_host=1, local_link=None, hierarchical=False):
        self.ranks_per_host, self.local_link, self.hierarchical = ranks_per_host, local_link, hierarchical

    def allreduce(self, link, algorithm, ranks, nbytes):
        r = self.ranks_per_host
        if r == 1:
            return link.allreduce(algorithm, ranks, nbytes)
        if ranks <= r:  # one host: shared memory alone
            return self.local_link.allreduce("ring", ranks, nbytes)
        if not self.hierarchical:  # a flat ring ordered by host: its slowest hop crosses the link
            return link.allreduce(algorithm, ranks, nbytes)
        # reduce-scatter and allgather on the host (each half a local ring allreduce), the host's
        # R shares across the H hosts at once through its one link
        return self.local_link.allreduce("ring", r, nbytes) + link.allreduce(algorithm, ranks // r, nbytes)


def predict(step, link, algorithm, ranks, threshold_mb, compression, powersgd_rank=2, powersgd_sec_per_element=0.0,
            overlap_forward=False, hosts=None, first_layers_mb=0):
    """Step time and the part of it spent waiting for the reduction, at `ranks` ranks."""
    hosts = hosts or Hosts()
    if ranks == 1:
        return step.step, 0.0
    bucket_of = []
    buckets = plan_buckets(step.tensors, threshold_mb * (1 << 20), bucket_of, first_layers_mb * (1 << 20))
    total = sum(b[0] for b in buckets)
    wire_bytes = 2 if compression in ("fp16", "bf16") else 4

    def busy(elements, tensors):
        if compression == "powersgd":
            first, second, compressed = powersgd_messages(tensors, powersgd_rank)
            seconds = compressed * powersgd_sec_per_element + hosts.allreduce(link, algorithm, ranks, first * 4)
            if compressed:
                seconds += hosts.allreduce(link, algorithm, ranks, second * 4)
            return seconds
        return hosts.allreduce(link, algorithm, ranks, elements * wire_bytes)

    comm_free = 0.0
    done = [0.0] * len(buckets)
    left = list(range(len(buckets)))
    while left:  # one communication thread: the oldest ready bucket, or with the overlap the newest
        now = max(comm_free, min(buckets[b][1] for b in left))
        ready = [b for b in left if buckets[b][1] <= now]
        b = max(ready) if overlap_forward else min(ready)
        left.remove(b)
        comm_free = now + busy(buckets[b][0], buckets[b][2])
        done[b] = comm_free
    rest = step.step - step.forward - step.backward - step.update  # loss, bookkeeping: the same at any rank count
    if overlap_forward:  # the next forward, from the end of backward, waits for and updates each layer's buckets
        clock = step.backward
        pending = set(range(len(buckets)))
        for seconds, tensor_indices in step.forward_layers:
            for b in sorted({bucket_of[t] for t in tensor_indices} & pending, reverse=True):
                clock = max(clock, done[b]) + step.update * buckets[b][0] / total
                pending.discard(b)
            clock += seconds
        for b in sorted(pending, reverse=True):
            clock = max(clock, done[b]) + step.update * buckets[b][0] / total
        step_time = clock + rest  # backward, then forward with its waits and updates
        return step_time, step_time - step.step
    clock = step.backward  # the optimizer takes each bucket after backward, as soon as it is back
    for (elements, _, _), finished in zip(buckets, done):
        clock = max(clock, finished) + step.update * elements / total
    step_time = step.forward + rest + clock
    return step_time, step_time - step.step
