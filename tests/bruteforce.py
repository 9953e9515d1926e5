"""Independent brute-force reference for the Bestemshe tablebase.

Written from the project's SPEC.md (rules, rank, format) alone.  It shares no code with the package
``bestemshe_dist`` and must never import it: it is the oracle the package is
checked against.  Everything here is deliberately plain and slow-but-obvious:

* positions are tuples of ``2 * pits`` pit counts, written from the mover's
  side (``t[0:pits]`` the mover's pits, ``t[pits:]`` the opponent's);
* a layer is a kazan pair ``(k1, k2)`` (mover's kazan, opponent's kazan);
* moves are sown literally, stone by stone (no arithmetic shortcuts);
* values come from the classic queue-based retrograde analysis over the
  explicit graph of *all* layers of the variant;
* distances come from a literal round-by-round evaluation of each pair of
  layers (see ``solve``).

Public functions (all pure; ``pits`` is the number of pits per side):

    win_kazan(stones) -> int
    layers(stones, pits) -> list[(k1, k2)]
    positions(stones, pits, k1, k2) -> list[tuple]
    rank(pit_tuple) -> int
    layer_size(stones, pits, k1, k2) -> int
    move(stones, pits, k1, k2, pit_tuple, i)
        -> None | ('win', captured) | ('child', (k1', k2', child_pits), captured)
    solve(stones, pits, with_distance=False)
        -> values                       {(k1, k2): {pit_tuple: 'W'|'L'|'D'}}
        -> (values, distance)           with_distance=True;
                                        distance {(k1, k2): {pit_tuple: int|None}}
                                        (None exactly for draws)
    layer_bitsets(stones, pits) -> {(k1, k2): (win_bytes, draw_bytes)}
    read_layer_file(path, nbits) -> bytes
"""

from __future__ import annotations

import math
import struct
from collections import deque

WIN, LOSS, DRAW = "W", "L", "D"

BLOCK_BYTES = 4 * 1024 * 1024  # 4 MiB raw bytes per zstd frame (SPEC)


# ---------------------------------------------------------------------------
# Variant geometry
# ---------------------------------------------------------------------------


def win_kazan(stones: int) -> int:
    """Smallest even number strictly greater than stones / 2 (26 for 50)."""
    w = 0
    while not (2 * w > stones):  # w > stones / 2, exact in integers
        w += 2
    return w


def kazans(stones: int) -> list[int]:
    """Stored kazan values: the even numbers 0 .. win_kazan - 2."""
    return list(range(0, win_kazan(stones) - 1, 2))


def layers(stones: int, pits: int) -> list[tuple[int, int]]:
    """All layers (k1, k2) of the variant, both kazans stored values."""
    ks = kazans(stones)
    out = [(a, b) for a in ks for b in ks]
    for a, b in out:
        assert a + b <= stones
    return out


def _compositions(total: int, parts: int):
    """Every tuple of `parts` non-negative ints summing to `total`."""
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def positions(stones: int, pits: int, k1: int, k2: int) -> list[tuple]:
    """All 2*pits-tuples of pit counts summing to r = stones - k1 - k2."""
    r = stones - k1 - k2
    assert r >= 0
    return list(_compositions(r, 2 * pits))


def rank(pit_tuple) -> int:
    """SPEC rank: sum_{i=0}^{n-2} C(i + p_i, i + 1), p_i = prefix sums."""
    n = len(pit_tuple)
    total = 0
    p = 0
    for i in range(n - 1):
        p += pit_tuple[i]
        total += math.comb(i + p, i + 1)
    return total


def layer_size(stones: int, pits: int, k1: int, k2: int) -> int:
    """Number of positions in a layer: C(r + n - 1, n - 1)."""
    n = 2 * pits
    r = stones - k1 - k2
    return math.comb(r + n - 1, n - 1)


# ---------------------------------------------------------------------------
# The move, literally as in SPEC "The game"
# ---------------------------------------------------------------------------


def move(stones: int, pits: int, k1: int, k2: int, pit_tuple, i: int):
    """Play own pit i (0 <= i < pits) from the position (k1, k2, pit_tuple).

    Returns
      None                                  if pit i is empty;
      ('win', captured)                     if the mover wins at once;
      ('child', (k1', k2', child), captured) otherwise, the child written
                                             from the opponent's side:
                                             k1' = k2, k2' = k1 + captured,
                                             child = board[pits:] + board[:pits].
    """
    n = 2 * pits
    assert len(pit_tuple) == n and 0 <= i < pits
    board = list(pit_tuple)
    s = board[i]
    if s == 0:
        return None
    # 1. Pit i is emptied.
    board[i] = 0
    # 2. Sowing, one stone at a time.
    in_hand = s
    if s == 1:
        last = (i + 1) % n
        board[last] += 1
        in_hand -= 1
    else:
        # one stone back into pit i ...
        board[i] += 1
        in_hand -= 1
        last = i
        # ... the other s - 1 one each into i+1, i+2, ... wrapping.
        pos = i
        while in_hand > 0:
            pos = (pos + 1) % n
            board[pos] += 1
            in_hand -= 1
            last = pos
    assert in_hand == 0
    # 3. Capture: last stone in an opponent pit that now holds an even count.
    captured = 0
    if pits <= last < n and board[last] % 2 == 0:
        captured = board[last]
        board[last] = 0
    # 4. Immediate win: opponent row empty, or kazan reaches win_kazan.
    if all(board[j] == 0 for j in range(pits, n)):
        return ("win", captured)
    if k1 + captured >= win_kazan(stones):
        return ("win", captured)
    # 5. Hand over to the opponent.
    child = tuple(board[pits:n]) + tuple(board[0:pits])
    return ("child", (k2, k1 + captured, child), captured)


# ---------------------------------------------------------------------------
# Solving
# ---------------------------------------------------------------------------


def _build_graph(stones: int, pits: int):
    """All states of all layers with their precomputed moves.

    Returns (states, index, moves) where states[sid] = (k1, k2, pit_tuple),
    index maps that triple to sid, and moves[sid] is a list with one entry
    per legal move: ('win', captured) or ('child', child_sid, captured).
    """
    states = []
    index = {}
    for k1, k2 in layers(stones, pits):
        for t in positions(stones, pits, k1, k2):
            index[(k1, k2, t)] = len(states)
            states.append((k1, k2, t))
    moves = []
    for k1, k2, t in states:
        ms = []
        for i in range(pits):
            res = move(stones, pits, k1, k2, t, i)
            if res is None:
                continue
            if res[0] == "win":
                ms.append(("win", res[1]))
            else:
                ms.append(("child", index[res[1]], res[2]))
        moves.append(ms)
    return states, index, moves


def _retrograde(states, moves):
    """Classic queue-based retrograde analysis over the whole graph.

    Returns value[sid] in {'W', 'L', 'D'}.
    """
    n_states = len(states)
    preds = [[] for _ in range(n_states)]  # one entry per edge (multi-edges kept)
    counter = [0] * n_states  # number of non-ending moves
    value = [None] * n_states
    queue = deque()
    for sid, ms in enumerate(moves):
        for m in ms:
            if m[0] == "child":
                preds[m[1]].append(sid)
                counter[sid] += 1
    for sid, ms in enumerate(moves):
        if not ms:
            value[sid] = LOSS
            queue.append(sid)
        elif any(m[0] == "win" for m in ms):
            value[sid] = WIN
            queue.append(sid)
    while queue:
        c = queue.popleft()
        for p in preds[c]:
            if value[p] is not None:
                continue
            if value[c] == LOSS:
                value[p] = WIN
                queue.append(p)
            else:
                counter[p] -= 1
                if counter[p] == 0:
                    value[p] = LOSS
                    queue.append(p)
    return [v if v is not None else DRAW for v in value]


def _pairs(stones: int, pits: int):
    """Pairs {(a, b), (b, a)} of layers (a <= b), one entry per pair."""
    return [(a, b) for (a, b) in layers(stones, pits) if a <= b]


def _distance_rounds(states, moves, value, pair_sids):
    """Literal round-by-round decision of one pair of layers.

    `value` (the final values of every state) is only consulted for capture
    children, which lie in layers with larger k1 + k2 (already solved).
    Round 0: positions with no move -> LOSS, distance 0.
    Round d >= 1: using only in-pair decisions from rounds < d, an undecided
    position becomes
      WIN  if some move wins at once, or captures into a LOSS child, or is
           non-capturing into an in-pair child decided LOSS;
      LOSS if every move captures into a WIN child, or is non-capturing into
           an in-pair child decided WIN.
    All decisions of round d are recorded only after the whole round has been
    evaluated.  Only positions having a non-capture child decided in round
    d - 1 can change their evaluation in round d (exits never change), so
    rounds >= 2 re-evaluate just those; round 1 evaluates every position.
    Returns {sid: (value, round)} for the decided positions of the pair.
    """
    in_pair = set(pair_sids)
    nc_preds = {sid: [] for sid in pair_sids}
    for sid in pair_sids:
        for m in moves[sid]:
            if m[0] == "child" and m[2] == 0:
                assert m[1] in in_pair
                nc_preds[m[1]].append(sid)
            elif m[0] == "child":
                assert m[1] not in in_pair
    decided = {}
    for sid in pair_sids:
        if not moves[sid]:
            decided[sid] = (LOSS, 0)

    def evaluate(sid, d):
        all_win_children = True
        for m in moves[sid]:
            if m[0] == "win":
                return WIN
            child, captured = m[1], m[2]
            if captured:  # exit: capture into an already solved layer
                cv = value[child]
            else:
                got = decided.get(child)
                cv = got[0] if got is not None and got[1] < d else None
            if cv == LOSS:
                return WIN
            if cv != WIN:
                all_win_children = False
        return LOSS if all_win_children else None

    candidates = [sid for sid in pair_sids if sid not in decided]
    d = 1
    while candidates:
        newly = {}
        for sid in candidates:
            if sid in decided:
                continue
            v = evaluate(sid, d)
            if v is not None:
                newly[sid] = v
        for sid, v in newly.items():
            decided[sid] = (v, d)
        nxt = set()
        for c in newly:
            for p in nc_preds[c]:
                if p not in decided:
                    nxt.add(p)
        candidates = sorted(nxt)
        d += 1
    return decided


def solve(stones: int, pits: int, with_distance: bool = False):
    """Solve every layer of the variant.

    Values: {(k1, k2): {pit_tuple: 'W' | 'L' | 'D'}} from queue-based
    retrograde analysis over the explicit graph of all layers.

    with_distance=True also returns distance {(k1, k2): {pit_tuple: d}},
    d an int for WIN/LOSS, None for DRAW, from `_distance_rounds` run on every
    pair (values of capture children taken from the retrograde result). The
    values implied by the round-by-round pass are asserted equal to the
    retrograde values.  Equivalently: no-move -> 0; WIN -> min over winning
    options of (1 for an immediate win or a capture into a LOSS, 1 + d(c) for
    a non-capture move to a LOSS child c); LOSS -> max over moves of (1 for a
    capture into a WIN, 1 + d(c) for a non-capture move to a WIN child c).
    """
    states, _index, moves = _build_graph(stones, pits)
    value = _retrograde(states, moves)

    values = {lay: {} for lay in layers(stones, pits)}
    for sid, (k1, k2, t) in enumerate(states):
        values[(k1, k2)][t] = value[sid]
    if not with_distance:
        return values

    by_layer = {lay: [] for lay in layers(stones, pits)}
    for sid, (k1, k2, _t) in enumerate(states):
        by_layer[(k1, k2)].append(sid)
    distance = {lay: {} for lay in layers(stones, pits)}
    for a, b in _pairs(stones, pits):
        sids = list(by_layer[(a, b)])
        if a != b:
            sids += by_layer[(b, a)]
        decided = _distance_rounds(states, moves, value, sids)
        for sid in sids:
            k1, k2, t = states[sid]
            got = decided.get(sid)
            if got is None:
                assert value[sid] == DRAW, (states[sid], value[sid])
                distance[(k1, k2)][t] = None
            else:
                assert value[sid] == got[0], (states[sid], value[sid], got)
                distance[(k1, k2)][t] = got[1]
    return values, distance


# ---------------------------------------------------------------------------
# Bitsets and files
# ---------------------------------------------------------------------------


def layer_bitsets(stones: int, pits: int, values=None):
    """{(k1, k2): (win_bytes, draw_bytes)}: bit rank%8 of byte rank//8."""
    if values is None:
        values = solve(stones, pits)
    out = {}
    for (k1, k2), vals in values.items():
        size = layer_size(stones, pits, k1, k2)
        win = bytearray((size + 7) // 8)
        draw = bytearray((size + 7) // 8)
        assert len(vals) == size
        for t, v in vals.items():
            r = rank(t)
            assert 0 <= r < size
            if v == WIN:
                win[r // 8] |= 1 << (r % 8)
            elif v == DRAW:
                draw[r // 8] |= 1 << (r % 8)
        out[(k1, k2)] = (bytes(win), bytes(draw))
    return out


def read_layer_file(path, nbits: int) -> bytes:
    """Read one layer file (SPEC "The file format"); return the raw bitset
    trimmed to ceil(nbits / 8) bytes.  Checks the header's invariants."""
    import zstandard

    with open(path, "rb") as f:
        data = f.read()
    (num_blocks,) = struct.unpack_from("<I", data, 0)
    offsets = struct.unpack_from(f"<{num_blocks + 1}I", data, 4)
    assert offsets[0] == 4 + 4 * (num_blocks + 1), offsets
    assert offsets[-1] == len(data), (offsets[-1], len(data))
    dctx = zstandard.ZstdDecompressor()
    raw = bytearray()
    for b in range(num_blocks):
        frame = data[offsets[b] : offsets[b + 1]]
        block = dctx.decompress(frame, max_output_size=BLOCK_BYTES)
        assert len(block) == BLOCK_BYTES, len(block)
        raw += block
    nbytes = (nbits + 7) // 8
    assert len(raw) >= nbytes
    assert num_blocks == -(-nbytes // BLOCK_BYTES), (num_blocks, nbytes)
    assert not any(raw[nbytes:]), "padding after the bitset is not zero"
    return bytes(raw[:nbytes])
