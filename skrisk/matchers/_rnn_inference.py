"""The RNN matcher's inference path: each distinct attribute value of a pool summarised once.

A candidate pool repeats attribute values a lot (each record appears in many candidate pairs,
and many records share a value), so summarising each distinct value once per
pass, in batches sorted by length, then comparing and classifying the pairs, is several times
cheaper than a plain batched forward pass, and independent of row order.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import torch

__all__ = ["POOL_CHUNK", "pool_passes"]

#: Pairs per chunk of the inference path (distinct values are found per chunk).
POOL_CHUNK = 65_536


def pool_passes(
    module: Any,
    tokens: np.ndarray,
    features: np.ndarray | None,
    *,
    device: str,
    batch_size: int,
    n_iter: int = 1,
    hidden: bool = False,
    progress: bool = False,
) -> Iterator[tuple[torch.Tensor | None, torch.Tensor]]:
    """Yield ``(H or None, P)`` CPU tensors per pass over the pool, chunk by chunk.

    Each distinct attribute value of a chunk is summarised once per pass (its GRU runs on the
    distinct values sorted by length, in batches of ``2 * batch_size``), then the pairs are
    compared and classified in batches of ``batch_size``. The caller sets the module's modes and
    the RNG, and disables gradients.

    Parameters
    ----------
    module : RNNMatcherModule
        The fitted network.
    tokens : ndarray of int of shape (n, 2 * A, L)
        Checked token ids.
    features : ndarray of shape (n, F) or None
        Similarity features (only read when the module uses them).
    device : str
        Where the module lives.
    batch_size : int
        Pairs per classification batch.
    n_iter : int, default=1
        Passes per chunk (MC dropout).
    hidden : bool, default=False
        Also yield the representations.
    progress : bool, default=False
        A tqdm bar over the chunks.
    """
    A = module.n_attributes
    n_emb = module.embedding.num_embeddings
    pbs = max(1, int(batch_size))
    sbs = 2 * pbs
    chunks: Any = range(0, tokens.shape[0], POOL_CHUNK)
    if progress:
        from tqdm.auto import tqdm

        chunks = tqdm(chunks, desc="RNNMatcher", unit="chunk", leave=False)
    for c0 in chunks:
        tok = np.asarray(tokens[c0 : c0 + POOL_CHUNK], dtype=np.int64)
        tok = np.where(tok >= n_emb, 1, tok)
        m = tok.shape[0]
        lengths = (tok != 0).sum(-1)  # (m, 2A)
        lengths_t = torch.as_tensor(lengths, device=device)
        ft = None
        if module.n_features:
            ft = torch.as_tensor(np.asarray(features[c0 : c0 + POOL_CHUNK], dtype=np.float32), device=device)
        # distinct values per attribute (both sides), sorted by length
        plan = []
        for k in range(A):
            L = max(1, int(lengths[:, [k, A + k]].max()))
            vals = np.concatenate([tok[:, k, :L], tok[:, A + k, :L]])
            uniq, inv = np.unique(vals, axis=0, return_inverse=True)
            inv = torch.as_tensor(inv.reshape(-1), device=device)
            ulen = (uniq != 0).sum(1)
            order = np.argsort(ulen, kind="stable")
            batches = []
            for b0 in range(0, len(uniq), sbs):
                idx = order[b0 : b0 + sbs]
                width = max(1, int(ulen[idx].max()))
                batches.append((
                    torch.as_tensor(idx, device=device),
                    torch.as_tensor(uniq[idx, :width], device=device),
                    torch.as_tensor(ulen[idx], device=device),
                ))
            plan.append((len(uniq), batches, inv[:m], inv[m:]))
        for _ in range(n_iter):
            summaries = []
            for k, (n_uniq, batches, inv_l, inv_r) in enumerate(plan):
                out = torch.empty((n_uniq, module.summarizers[k].out_size), device=device)
                for idx, ids, lens in batches:
                    out[idx] = module.summarize(k, ids, lens)
                summaries.append((out, inv_l, inv_r))
            hs, ps = [], []
            for b0 in range(0, m, pbs):
                sl = slice(b0, b0 + pbs)
                pairs = [(S[il[sl]], S[ir[sl]]) for S, il, ir in summaries]
                h = module.combine(pairs, lengths_t[sl], ft[sl] if ft is not None else None)
                ps.append(torch.softmax(module.output(h), dim=1).cpu())
                if hidden:
                    hs.append(h.cpu())
            yield (torch.cat(hs) if hidden else None), torch.cat(ps)
