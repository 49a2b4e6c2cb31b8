"""A tiny language model for the LMMatcher tests: a randomly initialised 2-layer BERT and an in-memory
word-piece tokenizer over the test data's words, saved as a model folder (seconds, no download)."""

from __future__ import annotations

import re

import pandas as pd
import torch


def words_of(frame: pd.DataFrame) -> set[str]:
    text = " ".join(" ".join(map(str, frame[c])) for c in frame.columns).lower()
    names = {c.split("_", 1)[1] for c in frame.columns}
    return set(re.findall(r"\w+|[^\w\s]", text)) | {"col", "val"} | names


def make_tiny_bert(folder, words, seed=0):
    """A 2-layer, 32-wide BERT with random weights and an in-memory word-piece tokenizer, saved as a
    model folder (config.json, model.safetensors, tokenizer.json)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(words))
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)
        BertModel(cfg).save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)
    return folder
