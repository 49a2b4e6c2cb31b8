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

The comparisons of all attributes (and the features) go through a dense layer, ``n_highway``
highway layers and dropout: that output is the *representation* ``h`` (``hidden``). A final linear
layer maps ``h`` to two logits.
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
    feature_skip : bool, default=False
        With features: also append them to the representation, so the output layer sees them
        directly (a wide-and-deep skip path; the representation then has
        ``classifier_size + n_features`` values).
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
        feature_skip: bool = False,
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
        comp = self.n_attributes * (2 * 2 * hidden_size + 2) + self.n_features
        layers: list[nn.Module] = [nn.Linear(comp, classifier_size), nn.ReLU()]
        layers += [Highway(classifier_size) for _ in range(n_highway)]
        layers.append(nn.Dropout(dropout))
        self.classifier = nn.Sequential(*layers)
        self.feature_skip = bool(feature_skip) and self.n_features > 0
        self.representation_size = classifier_size + (self.n_features if self.feature_skip else 0)
        self.output = nn.Linear(self.representation_size, 2)

    def hidden(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """The representation ``h`` (B, representation_size): the input of the output layer."""
        tokens = tokens.long()
        B, S, L = tokens.shape
        A = self.n_attributes
        n_emb = self.embedding.num_embeddings
        tokens = torch.where(tokens >= n_emb, torch.ones_like(tokens), tokens)
        lengths = (tokens != 0).sum(-1)  # (B, 2A); values are left-aligned, 0 = padding
        comps = []
        for k, summarizer in enumerate(self.summarizers):
            # left and right value of attribute k, stacked: (2B, L)
            ids = torch.cat([tokens[:, k], tokens[:, A + k]], dim=0)
            lens = torch.cat([lengths[:, k], lengths[:, A + k]], dim=0)
            s = summarizer(ids, lens, self.embedding)
            left, right = s[:B], s[B:]
            empty = torch.stack([lengths[:, k] == 0, lengths[:, A + k] == 0], dim=1).to(left.dtype)
            comps += [torch.abs(left - right), left * right, empty]
        if self.n_features:
            if features is None:
                raise ValueError(
                    "This matcher was trained with similarity features: pass "
                    "SliceDict(tokens=..., features=...) (PairEncoder(features=...))."
                )
            feats = features.to(left.dtype)
            comps.append(feats)
        h = self.classifier(torch.cat(comps, dim=1))
        if self.feature_skip:
            h = torch.cat([h, feats], dim=1)
        return h

    def forward(self, tokens: torch.Tensor, features: torch.Tensor | None = None) -> torch.Tensor:
        """Two logits per pair, ``(B, 2)``."""
        return self.output(self.hidden(tokens, features))
