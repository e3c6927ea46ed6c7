"""The compiled loops of :mod:`dse.predict.fused` (imported only when one first runs: numba takes ~0.2 s to import).

Every loop runs over one block of designs for one op, with the op's kind decided outside it, so that the compiler
vectorizes it (branches on a design's data are plain selects). Each expression is the numpy path's
(``dse.predict.roofline``, ``dse.predict.traffic``) with the same operations in the same order.

Argument groups (tuples of arrays, built by ``dse.predict.fused._prepare``/``_run``):
``ops`` per op: flops, live, grp, single, stay, isheld, fused, comp, eager, fcol, ia, ib, hidx, pin, ncol;
``unit``: RT [C, D] rate table, col [1 or D, O] its column per op, F [1 or D, O] fill, FV [k, D] per-design fills;
``lv``: lmode [L], XT/XX [L, O] shared traffic / time rows, BW [L, D], P [L, n_p, D] pass tables, CA/CC/CB [L, O]
traffic coefficients, lkeep [L], KR/KC/KX [L, D], KW [L, G, D], KH [L, 2G, D] residency tables, kcany [L];
``over``: graph, lmain, OV/GS/RAMP/HOST [D], MAT [1 or D, O], NET [collectives, D];
``sums``: the CSR rows of the mix's member, overlap and window matrices; ``counts``: those of its count matrix (the
energy model's bytes per workload, summed into ``EN`` [L, W, D] where it has levels).
"""

from __future__ import annotations

import functools

import numba
import numpy as np

njit = functools.partial(numba.njit, cache=True, nogil=True, error_model="numpy")
BLK = 512  #: designs per block: an op's rows of a block stay in the core's L1 cache


@njit
def _passes(t, cls, dim, out, r):
    """``out[r + p]`` <- ``ceil(dim_p / min(t[cls_p], dim_p))`` per pair ``p``; returns the next row."""
    for p in range(cls.shape[0]):
        n = dim[p]
        tc = t[cls[p]]
        for d in range(tc.shape[0]):
            m = tc[d] if tc[d] < n else n
            out[r, d] = np.ceil(n / m)
        r += 1
    return r


@njit
def pass_table(S, teb, a_cls, a_N, b_cls, b_M, hb, cap, M, out):
    """``out`` [n_p, D] <- ``[1 | a_passes | b_passes | kv_passes]`` of :func:`dse.predict.traffic.tile_passes` and
    ``kv_passes`` for the inner capacities ``S`` [D] (the same operations, designs last)."""
    D = S.shape[0]
    t = np.empty((teb.shape[0], D))
    for c in range(teb.shape[0]):  # tile side max(1, sqrt(S / teb))
        for d in range(D):
            x = np.sqrt(S[d] / teb[c])
            t[c, d] = x if x > 1.0 else 1.0
    out[0, :] = 1.0
    r = _passes(t, a_cls, a_N, out, 1)  # ceil(N / min(t, N))
    r = _passes(t, b_cls, b_M, out, r)  # ceil(M / min(t, M))
    for j in range(hb.shape[0]):  # ceil(M / clip(S / (4 d e), 1, cap))
        h = hb[j]
        hi = cap[j]
        for d in range(D):
            q = S[d] / h
            q = q if q > 1.0 else 1.0
            q = q if q < hi else hi
            out[r, d] = np.ceil(M[j] / q)
        r += 1


@njit
def _clip01(x):
    return 0.0 if x < 0.0 else (1.0 if x > 1.0 else x)


@njit
def keep_table(R, cache, full, steps, U, table, most, w, kv, whole, rr):
    """``whole`` [G, D] and ``rr`` [2G, D] of :func:`dse.predict.traffic.residency_tables` (the same operations,
    designs last): the share of each workload's step a cache serves, and of its weights and KV cache that stay."""
    G = w.shape[0]
    any_cache = cache.any()
    for d in range(R.shape[0]):
        j = np.searchsorted(U, R[d], side="right") - 1
        for g in range(G):
            reserve = table[j, g]
            room = R[d] - reserve
            room = room if room > 0.0 else 0.0
            r_w = _clip01(room / w[g]) if w[g] > 0 else 1.0
            r_kv = _clip01((R[d] - reserve - w[g]) / kv[g]) if kv[g] > 0 else 1.0
            if any_cache:
                ws = most[g] + w[g] + kv[g]
                top = full[d] if full[d] > R[d] else R[d]
                h = 1.0 if ws <= R[d] else _clip01((top - ws) / (top - R[d]))
                whole[g, d] = h
                if cache[d]:
                    r_w = h
                    r_kv = h
            if not steps[d]:
                r_w = r_w * 0.0
                r_kv = r_kv * 0.0
            rr[g, d] = r_w
            rr[G + g, d] = r_kv


@njit
def _keep_shares(o, b0, n, lvi, live, grp, single, stay, isheld, hidx, pin, KR, KC, KX, KW, KH, kcany, ka, kb):
    """``ka`` <- the share of op ``o``'s activation bytes that crosses level ``lvi``; returns the B operand's share
    (``kb`` <- its held tensor's where it holds one, else ``ka``) (``dse.predict.traffic.residency_keep``)."""
    if not stay[o]:
        ka[:n] = 1.0
    else:
        lo = live[o]
        kr = KR[lvi, b0 : b0 + n]
        for k in range(n):  # a scratchpad keeps what fits
            ka[k] = 1.0 if lo > kr[k] else 0.0
        if kcany[lvi]:  # a cache serves its share of the step
            kc, kw = KC[lvi, b0 : b0 + n], KW[lvi, grp[o], b0 : b0 + n]
            for k in range(n):
                ka[k] = 1.0 - kw[k] if kc[k] else ka[k]
        if single[o]:  # a one-kernel step's inputs and outputs stay only across steps
            kx = KX[lvi, b0 : b0 + n]
            for k in range(n):
                ka[k] = ka[k] if kx[k] else 1.0
    if not isheld[o]:
        return ka
    kh = KH[lvi, hidx[o], b0 : b0 + n]
    pn = pin[o]
    for k in range(n):
        kb[k] = 1.0 - kh[k] * pn
    return kb


@njit
def _graph_overhead(o, b0, n, comp, OV, GS, RAMP, MAT, trm, tv):
    """``tv`` <- the overhead of a streaming kernel in a graph: its launch plus its memory pipeline's ramp by the share
    of its bytes that reach main memory (``dse.predict.roofline.overhead_times``)."""
    co = comp[o]
    per_mat = MAT.shape[0] > 1
    for k in range(n):
        on = per_mat and MAT[b0 + k, o]
        tv[k] = OV[b0 + k] if on else GS[b0 + k] + RAMP[b0 + k] * _clip01(trm[k] / co)


@njit
def _pipeline_fill(o, b0, n, pipe, MAT, tc, trm, BWm, wrt, tv):
    """``tv`` += op ``o``'s exposed software-pipeline fill and drain where it runs on the MAC arrays
    (``dse.predict.pipeline.pipeline_exposed``: the same operations in the same order): its main-memory time
    ``trm / BWm`` split into input and output, its blocks, steps and output blocks per core, the two chains."""
    PM, PN, PK, PIB, PCO, SQ, WK, rho = pipe
    mm, nn, kk, ib, co = PM[o], PN[o], PK[o], PIB[o], PCO[o]
    per_mat = MAT.shape[0] > 1
    for k in range(n):
        if not (MAT[b0 + k, o] if per_mat else MAT[0, o]):
            continue
        tr = trm[k]
        if rho != 1.0:
            tr = tr + (rho - 1.0) * (wrt if wrt < tr else tr)
        rate = BWm[k]
        tm = tr / rate
        x = co / rate
        t_out = x if x < tm else tm
        t_in = tm - t_out
        b = SQ[b0 + k] * ib
        n_out = mm if mm < b else b
        n_out *= nn if nn < b else b
        n_out *= WK[b0 + k]
        n_out = np.ceil((mm * nn) / n_out)
        n_out = n_out if n_out > 1.0 else 1.0
        steps = np.ceil(kk / (kk if kk < b else b)) * n_out
        tck = tc[k]
        first = t_in / steps
        first += tck
        first += t_out / n_out
        last = tck / steps
        last += t_in
        last += t_out
        both = t_in + t_out
        ex = (first if first >= last else last) - (tck if tck >= both else both)
        tv[k] += ex if ex > 0.0 else 0.0


@njit
def _label_fill(fl, MAT, o, b0, n):
    """``fl`` <- 1 where op ``o`` ran on the vector units (``MAT`` [1 or D, O] false): after the compute term is made,
    the fill only labels the ceiling, and the array label is the MAC array's (``dse.predict.roofline.array_bound``)."""
    if MAT.shape[0] > 1:
        for k in range(n):
            if not MAT[b0 + k, o]:
                fl[k] = 1.0
    elif not MAT[0, o]:
        fl[:n] = 1.0


@njit(inline="always")
def _ceiling(code, x, c, f, roof, over, L):
    """One op's binding ceiling on one design, ``evaluate_bound``'s code: the memory/network term's ``code`` where it
    exceeds the compute term ``c``, else compute (0), array-bound (``L + 3``) where the fill ``f`` decides it, and
    the overhead (``L + 2``) where it exceeds the roof. Bitwise, not short-circuit: selects the compiler vectorizes."""
    b = code if x > c else 0
    arr = (b == 0) & (f < 1.0) & ((f < 0.5) | (roof * f < x))
    b = L + 3 if arr else b
    return L + 2 if over > roof else b


@njit
def _time_plain(n, L, want, tc, fl, oth, code, ov, tt, cd):
    """``tt`` <- roof + launch overhead ``ov`` of an op that is neither fused, eager nor in a graph, in one loop;
    with ``want`` ``cd`` <- its binding ceiling (:func:`_ceiling`) in the same loop."""
    if not want:
        for k in range(n):
            tt[k] = (oth[k] if oth[k] > tc[k] else tc[k]) + ov[k]
        return
    for k in range(n):
        c, x = tc[k], oth[k]
        roof = x if x > c else c
        tt[k] = roof + ov[k]
        cd[k] = _ceiling(code[k], x, c, fl[k], roof, ov[k], L)


@njit
def _bound(o, n, L, owner, weight, tc, fl, oth, code, tt, tv, rf, cd, BL):
    """``cd`` <- op ``o``'s binding ceiling (:func:`_ceiling`); its time x weight into its workload's row."""
    for k in range(n):
        cd[k] = _ceiling(code[k], oth[k], tc[k], fl[k], rf[k], tv[k], L)
    _add_bound(o, n, owner, weight, tt, cd, BL)


@njit
def _add_bound(o, n, owner, weight, tt, cd, BL):
    """Op ``o``'s time x weight into its workload's row of the ceiling ``cd`` it binds under (one masked sum per
    ceiling between the block's smallest and largest code: usually one)."""
    lo, hi = cd[0], cd[0]
    for k in range(n):
        lo = cd[k] if cd[k] < lo else lo
        hi = cd[k] if cd[k] > hi else hi
    v = weight[o]
    if lo == hi:  # one ceiling over the whole block: a plain sum
        row = BL[owner[o], lo, :n]
        for k in range(n):
            row[k] += tt[k] * v
        return
    for b in range(lo, hi + 1):
        row = BL[owner[o], b, :n]
        for k in range(n):
            row[k] = row[k] + tt[k] * v if cd[k] == b else row[k]


@njit
def _summary(b0, n, BL, mixw, TOP, BIND, SHX, tot, best, arg, sh):
    """``TOP`` <- each workload's binding ceiling (the first largest, as argmax); ``BIND``/``SHX`` <- the ceiling with
    the largest share of the time weighted by ``mixw`` and that share (``dse.predict.binding_summary``)."""
    n_b = BL.shape[1]
    sh[:, :n] = 0.0
    for w in range(BL.shape[0]):
        tot[:n] = 0.0
        for b in range(n_b):
            for k in range(n):
                tot[k] += BL[w, b, k]
        best[:n] = BL[w, 0, :n]
        arg[:n] = 0
        for b in range(1, n_b):
            for k in range(n):
                x = BL[w, b, k]
                up = x > best[k]
                best[k] = x if up else best[k]
                arg[k] = b if up else arg[k]
        TOP[w, b0 : b0 + n] = arg[:n]
        v = mixw[w]
        for b in range(n_b):
            row = sh[b]
            for k in range(n):
                row[k] += v * (BL[w, b, k] / tot[k])
    best[:n] = sh[0, :n]
    arg[:n] = 0
    for b in range(1, n_b):
        for k in range(n):
            up = sh[b, k] > best[k]
            best[k] = sh[b, k] if up else best[k]
            arg[k] = b if up else arg[k]
    BIND[b0 : b0 + n] = arg[:n]
    SHX[b0 : b0 + n] = best[:n]


@njit
def _fold(n, x, c, oth, code):
    """``oth``/``code`` <- ``x`` and ``c`` where ``x`` is strictly larger (the earlier term keeps ties)."""
    for k in range(n):
        w = x[k] > oth[k]
        oth[k] = x[k] if w else oth[k]
        code[k] = c if w else code[k]


@njit
def _fold_div(n, tr, bw, c, oth, code, first):
    """:func:`_fold` of ``tr / bw`` (a level's time from its traffic and bandwidth; all of it where ``first``)."""
    if first:
        for k in range(n):
            oth[k] = tr[k] / bw[k]
        code[:n] = c
        return
    for k in range(n):
        x = tr[k] / bw[k]
        w = x > oth[k]
        oth[k] = x if w else oth[k]
        code[k] = c if w else code[k]


@njit
def _fold_value(n, x, c, oth, code, first):
    """:func:`_fold` of one value ``x`` for every design."""
    if first:
        oth[:n] = x
        code[:n] = c
        return
    for k in range(n):
        w = x > oth[k]
        oth[k] = x if w else oth[k]
        code[k] = c if w else code[k]


@njit
def _write_weighted(n, tv, w, ratio):
    """``tv`` <- ``tv + (ratio - 1) x min(w, tv)``: a level's traffic in read-byte equivalents
    (``dse.predict.traffic.write_weighted``, the same operations in the same order)."""
    for k in range(n):
        tv[k] = tv[k] + (ratio - 1.0) * (w if w < tv[k] else tv[k])


@njit
def _kept(n, lo, kr, held, kh, pn, a, cc, bb, pa, pb, tv):
    """``tv`` <- a level's traffic with a scratchpad inside: activations cross where ``live > R``, the held share
    ``1 - r x pinned`` of a held B operand (``residency_keep``, the common case in one loop)."""
    if held:
        for k in range(n):
            ka = 1.0 if lo > kr[k] else 0.0
            tv[k] = (a * pa[k] + cc) * ka + (bb * pb[k]) * (1.0 - kh[k] * pn)
    else:
        for k in range(n):
            ka = 1.0 if lo > kr[k] else 0.0
            tv[k] = (a * pa[k] + cc) * ka + (bb * pb[k]) * ka


@njit
def _add_bytes(o, b0, n, lvi, tr, counts, EN):
    """``EN[lvi, w]`` += op ``o``'s traffic at level ``lvi`` (one value or a row over the block) x its count in
    workload ``w`` (``counts``: CSR rows of an [O, W] matrix)."""
    ptr, idx, val = counts
    for q in range(ptr[o], ptr[o + 1]):
        row = EN[lvi, idx[q], b0 : b0 + n]
        row += tr * val[q]


@njit
def _sums(o, b0, n, sums, T, OVS, WIN, tt):
    """The step sums += op ``o``'s time x its member, overlap and window coefficients (CSR rows)."""
    for q in range(sums[0][o], sums[0][o + 1]):
        row, v = T[sums[1][q], b0 : b0 + n], sums[2][q]
        for k in range(n):
            row[k] += tt[k] * v
    for q in range(sums[3][o], sums[3][o + 1]):
        row, v = OVS[sums[4][q], b0 : b0 + n], sums[5][q]
        for k in range(n):
            row[k] += tt[k] * v
    for q in range(sums[6][o], sums[6][o + 1]):
        row, v = WIN[sums[7][q], b0 : b0 + n], sums[8][q]
        for k in range(n):
            row[k] += tt[k] * v


@njit
def kernel(ops, unit, lv, over, sums, want, n_b, owner, weight, mixw, T, OVS, WIN, BY, TOP, BIND, SHX, counts, EN):
    """Per block of designs, per op: the compute term, each level's memory term (modes: 0 a shared time row, 1 a
    shared traffic row over each design's bandwidth, 2 per design), the network term, the overhead, the time, the
    binding ceiling; summed into ``T``/``OVS``/``WIN`` [W, D] and, with ``want``, the block's time under each ceiling
    (copied to ``BY`` [W, B, D] where it has D columns, summarized into ``TOP``/``BIND``/``SHX`` where ``mixw`` is
    given; with an ``EN`` [L, W, D], each level's bytes x ``counts`` (a CSR [O, W]) per workload, for the energy
    model). The hot loops stay in this one function (split into calls per op it ran 1.4x slower)."""
    flops, live, grp, single, stay, isheld, fused, comp, eager, fcol, ia, ib, hidx, pin, ncol, wrt = ops
    RT, col, F, FV = unit
    lmode, XT, XX, BW, P, CA, CC, CB, lkeep, KR, KC, KX, KW, KH, RHO, kcany = lv
    graph, lmain, OV, GS, RAMP, MAT, HOST, NET, PT, pipe = over
    D, L = RT.shape[1], lmode.shape[0]
    tc, fl, oth, trm, tt, tv = np.zeros(BLK), np.zeros(BLK), np.zeros(BLK), np.zeros(BLK), np.zeros(BLK), np.zeros(BLK)
    rf, ka, kb, tot, best = np.zeros(BLK), np.zeros(BLK), np.zeros(BLK), np.zeros(BLK), np.zeros(BLK)
    code, cd, arg = np.zeros(BLK, dtype=np.int64), np.zeros(BLK, dtype=np.int64), np.zeros(BLK, dtype=np.int64)
    per_col = col.shape[0] > 1
    BL = np.zeros((T.shape[0], n_b if want else 1, BLK))
    sh = np.zeros((BL.shape[1], BLK))
    for b0 in range(0, D, BLK):
        n = min(BLK, D - b0)
        BL[:, :, :n] = 0.0
        for o in range(flops.shape[0]):
            fo, j = flops[o], fcol[o]
            if j >= 0 or F.shape[0] > 1:
                fl[:n] = FV[j, b0 : b0 + n] if j >= 0 else F[b0 : b0 + n, o]
            else:
                fl[:n] = F[0, o]
            if per_col:  # compute: flops / (peak x eff x fill)
                for k in range(n):
                    tc[k] = fo / (RT[col[b0 + k, o], b0 + k] * fl[k])
            else:
                rt = RT[col[0, o], b0 : b0 + n]
                for k in range(n):
                    tc[k] = fo / (rt[k] * fl[k])
            if want:  # the fill after this point only labels the ceiling
                _label_fill(fl, MAT, o, b0, n)
            for lvi in range(L):  # memory: the largest traffic / (BW x eta), the first (innermost) level on ties
                m, bw = lmode[lvi], BW[lvi, b0 : b0 + n]
                if m == 0:  # one value for every design
                    if lvi == lmain:
                        trm[:n] = XT[lvi, o]
                    if EN.shape[0]:
                        _add_bytes(o, b0, n, lvi, XT[lvi, o], counts, EN)
                    _fold_value(n, XX[lvi, o], lvi + 1, oth, code, lvi == 0)
                    continue
                if m == 1:
                    tv[:n] = XT[lvi, o]
                else:
                    a, cc, bb = CA[lvi, o], CC[lvi, o], CB[lvi, o]
                    pa, pb = P[lvi, ia[o], b0 : b0 + n], P[lvi, ib[o], b0 : b0 + n]
                    if lkeep[lvi] and stay[o] and not single[o] and not kcany[lvi]:  # a scratchpad: one loop
                        _kept(n, live[o], KR[lvi, b0 : b0 + n], isheld[o], KH[lvi, hidx[o], b0 : b0 + n], pin[o],
                              a, cc, bb, pa, pb, tv)
                    elif lkeep[lvi]:
                        kbv = _keep_shares(o, b0, n, lvi, live, grp, single, stay, isheld, hidx, pin, KR, KC, KX, KW,
                                           KH, kcany, ka, kb)
                        for k in range(n):
                            tv[k] = (a * pa[k] + cc) * ka[k] + (bb * pb[k]) * kbv[k]
                    else:
                        for k in range(n):
                            tv[k] = (a * pa[k] + bb * pb[k]) + cc
                if lvi == lmain:
                    trm[:n] = tv[:n]
                if EN.shape[0]:
                    _add_bytes(o, b0, n, lvi, tv[:n], counts, EN)
                if RHO[lvi] != 1.0:  # writes at their own bandwidth (traffic.write_weighted), after the bytes are kept
                    _write_weighted(n, tv, wrt[o], RHO[lvi])
                _fold_div(n, tv, bw, lvi + 1, oth, code, lvi == 0)
            if ncol[o] >= 0:  # a collective's network term
                _fold(n, NET[ncol[o], b0 : b0 + n], L + 1, oth, code)
            if not (fused[o] or eager[o] or graph or PT[o]):  # the time (and ceiling) in one loop: roof + launch
                _time_plain(n, L, want, tc, fl, oth, code, OV[b0 : b0 + n], tt, cd)
                if want:
                    _add_bound(o, n, owner, weight, tt, cd, BL)
                _sums(o, b0, n, sums, T, OVS, WIN, tt)
                continue
            for k in range(n):  # the roof, the overhead, the time
                rf[k] = oth[k] if oth[k] > tc[k] else tc[k]
            if fused[o]:
                tv[:n] = 0.0
            elif graph and comp[o] > 0 and (MAT.shape[0] > 1 or not MAT[0, o]):
                _graph_overhead(o, b0, n, comp, OV, GS, RAMP, MAT, trm, tv)
            else:
                tv[:n] = OV[b0 : b0 + n]
            if PT[o] and flops[o] > 0 and not fused[o]:  # a scratchpad pipeline's fill and drain
                _pipeline_fill(o, b0, n, pipe, MAT, tc, trm, BW[lmain, b0 : b0 + n], wrt[o], tv)
            for k in range(n):
                tt[k] = rf[k] + tv[k]
            if eager[o]:  # the host dispatches it: at least its dispatch time
                for k in range(n):
                    h = HOST[b0 + k]
                    tt[k] = h if h > tt[k] else tt[k]
                    tv[k] = h - rf[k] if h - rf[k] > tv[k] else tv[k]
            if want:
                _bound(o, n, L, owner, weight, tc, fl, oth, code, tt, tv, rf, cd, BL)
            _sums(o, b0, n, sums, T, OVS, WIN, tt)
        if want and BY.shape[2] == D:
            BY[:, :, b0 : b0 + n] = BL[:, :, :n]
        if want and mixw.shape[0] > 0:
            _summary(b0, n, BL, mixw, TOP, BIND, SHX, tot, best, arg, sh)
