"""The torch module of the RNN matcher (DeepMatcher-style hybrid of RNN summaries and comparisons).

Layout of the input: ``tokens`` int64 ``(B, 2 * A, L)``, the ``A`` left attributes then the ``A``
right attributes, each a sequence of token ids padded with 0 (see :class:`skrisk.data.PairEncoder`);
optionally ``features`` float ``(B, F)`` (similarity features).

Per attribute ``k`` (weights shared between the two sides):

1. embed the real (non-pad) tokens (a frozen word-vector matrix by default) and apply dropout
   (``rnn_dropout``, the MC-dropout site of the paper: "dropout 0.2 in the inputs to the RNN
   module"); values are left-aligned, a value's length is its number of non-zero ids;
2. a bidirectional GRU over the packed sequence (``pack_padded_sequence``, ``enforce_sorted=False``;
   only non-empty sequences are run);
3. attention pooling ``s = sum_t softmax(v . tanh(W o_t)) o_t`` over the real (non-pad) positions;
   an empty value (all padding) gets the zero vector;
4. comparison ``[|s_left - s_right|, s_left * s_right]`` plus two "is empty" flags.

The comparisons of all attributes (and the standardised features) go through a dense layer,
``n_highway`` highway layers and dropout: that output is the *representation* ``h`` (``hidden``).
A final linear layer maps ``h`` to two logits.

``hidden`` = ``prepare`` + ``summarize`` per attribute + ``combine``; the matcher's inference
path calls the pieces itself to summarise each distinct attribute value of a pool only once.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

__all__ = ["AttributeSummarizer", "Highway", "RNNMatcherModule"]


class Highway(nn.Module):
    """A highway layer ``y = g * relu(W x) + (1 - g) * x`` with gate ``g = sigmoid(W_g x)``."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.transform = nn.Linear(size, size)
        self.gate = nn.Linear(size, size)
        nn.init.constant_(self.gate.bias, -1.0)  # start close to the identity

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        g = torch.sigmoid(self.gate(x))
        return g * torch.relu(self.transform(x)) + (1 - g) * x


class AttributeSummarizer(nn.Module):
    """Bidirectional GRU plus attention pooling of one attribute's token vectors.

    Parameters
    ----------
    input_size : int
        Word-vector size.
    hidden_size : int
        GRU size per direction (the summary has ``2 * hidden_size`` values).
    attention : bool, default=True
        Attention pooling; ``False`` uses the mean of the GRU outputs.
    input_dropout : float, default=0.0
        Dropout on the word vectors entering the GRU, applied to the real tokens only (the
        packed data), which keeps MC-dropout passes cheap.
    """

    def __init__(
        self, input_size: int, hidden_size: int, attention: bool = True, input_dropout: float = 0.0
    ) -> None:
        super().__init__()
        self.input_dropout = nn.Dropout(input_dropout)
        self.gru = nn.GRU(input_size, hidden_size, batch_first=True, bidirectional=True)
        self.attention = attention
        if attention:
            self.att_proj = nn.Linear(2 * hidden_size, hidden_size)
            self.att_v = nn.Linear(hidden_size, 1, bias=False)
        self.out_size = 2 * hidden_size

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor, embedding: nn.Embedding) -> torch.Tensor:
        """Summaries ``(N, 2 * hidden_size)`` of ``N`` token-id sequences ``ids (N, L)``.

        Only the real tokens are embedded (the ids are packed first), so padding costs nothing.
        """
        n = ids.shape[0]
        out = embedding.weight.new_zeros((n, self.out_size))
        nonempty = torch.nonzero(lengths > 0, as_tuple=True)[0]
        if nonempty.numel() == 0:
            return out
        lens = lengths[nonempty]
        L = int(lens.max())
        packed_ids = pack_padded_sequence(ids[nonempty, :L], lens.cpu(), batch_first=True, enforce_sorted=False)
        data = self.input_dropout(embedding(packed_ids.data))
        packed = PackedSequence(data, packed_ids.batch_sizes, packed_ids.sorted_indices, packed_ids.unsorted_indices)
        o, _ = self.gru(packed)
        o, _ = pad_packed_sequence(o, batch_first=True, total_length=L)  # (M, L, 2h), zeros on pad
        mask = torch.arange(L, device=o.device)[None, :] < lens[:, None]
        if self.attention:
            scores = self.att_v(torch.tanh(self.att_proj(o))).squeeze(-1)
            scores = scores.masked_fill(~mask, float("-inf"))
            weights = torch.softmax(scores, dim=1)
        else:
            weights = mask.to(o.dtype) / lens[:, None].to(o.dtype)
        summary = torch.bmm(weights.unsqueeze(1), o).squeeze(1)
        return out.index_copy(0, nonempty, summary)


class RNNMatcherModule(nn.Module):
    """DeepMatcher-style pair classifier over padded token ids (and optional features).

    Parameters
    ----------
    n_attributes : int
        ``A``; the input has ``2 * A`` sequences per pair.
    n_embeddings : int
        Rows of the embedding table. Ids ``>= n_embeddings`` are read as ``<unk>`` (1).
    embedding_dim : int
        Word-vector size (ignored when ``embeddings`` is given).
    embeddings : array-like of shape (n_embeddings, embedding_dim), default=None
        Initial embedding matrix; ``None`` draws it at random (then it is always trained).
    freeze_embeddings : bool, default=True
        Keep a given embedding matrix fixed.
    hidden_size : int, default=64
        GRU size per direction.
    attention : bool, default=True
        Attention pooling of the GRU outputs (else mean pooling).
    n_features : int, default=0
        Width of the optional ``features`` input (0: none).
    classifier_size : int, default=128
        Width of the dense and highway layers; the representation has this size.
    n_highway : int, default=1
        Highway layers after the dense layer.
    dropout : float, default=0.2
        Dropout on the representation (before the output layer).
    rnn_dropout : float, default=0.2
        Dropout on the word vectors entering the GRUs.

    Notes
    -----
    Features are standardised inside the module with the buffers ``feature_center`` and
    ``feature_scale`` (0 and 1 until the matcher sets them from the training features), so
    saved weights carry the scaling.
    """

    def __init__(
        self,
        n_attributes: int,
        n_embeddings: int,
        embedding_dim: int = 100,
        embeddings: object = None,
        freeze_embeddings: bool = True,
        hidden_size: int = 64,
        attention: bool = True,
        n_features: int = 0,
        classifier_size: int = 128,
        n_highway: int = 1,
        dropout: float = 0.2,
        rnn_dropout: float = 0.2,
    ) -> None:
        super().__init__()
        if embeddings is not None:
            weight = torch.as_tensor(np.asarray(embeddings, dtype=np.float32))
            self.embedding = nn.Embedding.from_pretrained(weight, freeze=bool(freeze_embeddings), padding_idx=0)
        else:
            self.embedding = nn.Embedding(n_embeddings, embedding_dim, padding_idx=0)
        self.n_attributes = int(n_attributes)
        self.n_features = int(n_features)
        dim = self.embedding.embedding_dim
        self.summarizers = nn.ModuleList(
            [AttributeSummarizer(dim, hidden_size, attention, rnn_dropout) for _ in range(self.n_attributes)]
        )
        if self.n_features:
            self.register_buffer("feature_center", torch.zeros(self.n_features))
            self.register_buffer("feature_scale", torch.ones(self.n_features))
        comp = self.n_attributes * (2 * 2 * hidden_size + 2) + self.n_features
        layers: list[nn.Module] = [nn.Linear(comp, classifier_size), nn.ReLU()]
        layers += [Highway(classifier_size) for _ in range(n_highway)]
        layers.append(nn.Dropout(dropout))
        self.classifier = nn.Sequential(*layers)
        self.representation_size = classifier_size
        self.output = nn.Linear(self.representation_size, 2)

    def set_feature_scaling(self, center: object, scale: object) -> None:
        """Standardise the features as ``(x - center) / scale`` from now on."""
        if not self.n_features:
            return
        c = torch.as_tensor(np.asarray(center, dtype=np.float32), device=self.feature_center.device)
        s = torch.as_tensor(np.asarray(scale, dtype=np.float32), device=self.feature_scale.device)
        self.feature_center.copy_(c)
        self.feature_scale.copy_(torch.where(s > 0, s, torch.ones_like(s)))

    def prepare(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Token ids as int64 with ids beyond the table read as ``<unk>``, and their lengths."""
        tokens = tokens.long()
        n_emb = self.embedding.num_embeddings
        tokens = torch.where(tokens >= n_emb, torch.ones_like(tokens), tokens)
        return tokens, (tokens != 0).sum(-1)

    def summarize(self, k: int, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Summaries ``(N, 2 * hidden_size)`` of ``N`` values of attribute ``k`` (prepared ids)."""
        return self.summarizers[k](ids, lengths, self.embedding)

    def combine(
        self,
        summaries: list[tuple[torch.Tensor, torch.Tensor]],
        lengths: torch.Tensor,
        features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The representation from the per-attribute ``(left, right)`` summaries.

        ``lengths`` (B, 2A) are the value lengths (0: empty value).
        """
        A = self.n_attributes
        comps = []
        for k, (left, right) in enumerate(summaries):
            empty = torch.stack([lengths[:, k] == 0, lengths[:, A + k] == 0], dim=1).to(left.dtype)
            comps += [torch.abs(left - right), left * right, empty]
        if self.n_features:
            if features is None:
                raise ValueError(
                    "This matcher was trained with similarity features: pass "
                    "SliceDict(tokens=..., features=...) (PairEncoder(features=...))."
                )
            comps.append((features.to(comps[0].dtype) - self.feature_center) / self.feature_scale)
        return self.classifier(torch.cat(comps, dim=1))

    def hidden(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """The representation ``h`` (B, representation_size): the input of the output layer."""
        tokens, lengths = self.prepare(tokens)
        B = tokens.shape[0]
        A = self.n_attributes
        summaries = []
        for k in range(A):
            # left and right value of attribute k, stacked: (2B, L)
            ids = torch.cat([tokens[:, k], tokens[:, A + k]], dim=0)
            lens = torch.cat([lengths[:, k], lengths[:, A + k]], dim=0)
            s = self.summarize(k, ids, lens)
            summaries.append((s[:B], s[B:]))
        return self.combine(summaries, lengths, features)

    def forward(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """Two logits per pair, ``(B, 2)``."""
        return self.output(self.hidden(tokens, features))
