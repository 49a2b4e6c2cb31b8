"""The one JSON form of blocking rules, kept by the labelling session's manifest and the saved match model."""

from __future__ import annotations

import numpy as np

from ._blocking import _check_rule_params


def blocking_rules_to_json(rules: object) -> list[dict] | None:
    """Blocking rules as JSON values: ``[{"method", "columns", "params"}, ...]`` (``None``: the default).

    The one JSON form of blocking rules, used by the labelling session's manifest and by the saved
    match model; :func:`blocking_rules_from_json` reads it back.

    Raises
    ------
    TypeError
        When a rule is not ``(method, columns[, params])`` or a parameter is not a number, a
        string or None.

    Examples
    --------
    >>> from skrisk.data._rules_json import blocking_rules_from_json, blocking_rules_to_json
    >>> data = blocking_rules_to_json([("standard", "city"), ("tokens", ["name"], {"top_k": 5})])
    >>> data[1]
    {'method': 'tokens', 'columns': ['name'], 'params': {'top_k': 5}}
    >>> blocking_rules_from_json(data)
    [('standard', ['city'], {}), ('tokens', ['name'], {'top_k': 5})]
    """
    if rules is None:
        return None
    if isinstance(rules, tuple) and rules and isinstance(rules[0], str):
        rules = [rules]
    out = []
    for rule in rules:  # type: ignore[union-attr]
        if not isinstance(rule, (tuple, list)) or len(rule) not in (2, 3) or not isinstance(rule[0], str):
            raise TypeError(f"A blocking rule is (method, columns[, params]), got {rule!r}.")
        cols = rule[1]  # None: every shared attribute
        params = dict(rule[2]) if len(rule) == 3 else {}
        for k, v in params.items():
            if isinstance(v, (np.integer, np.floating)):
                params[k] = v.item()
            elif rule[0] == "typed" and k == "types" and isinstance(v, dict):
                params[k] = {str(c): dict(t) if isinstance(t, dict) else t for c, t in v.items()}
            elif not isinstance(v, (bool, int, float, str, type(None))):
                raise TypeError(f"Blocking rule {rule!r}: parameter {k}={v!r} is not a number, string or None.")
        out.append({
            "method": str(rule[0]),
            "columns": None if cols is None else ([cols] if isinstance(cols, str) else [str(c) for c in cols]),
            "params": params,
        })
    return out


def blocking_rules_from_json(data: object) -> list[tuple[str, list[str] | None, dict]] | None:
    """Blocking rules from their JSON form (:func:`blocking_rules_to_json`); ``None`` stays ``None``.

    Raises
    ------
    TypeError
        When ``data`` is not a list of ``{"method": str, "columns": [str] or null, "params": {}}``;
        callers name the file it came from.
    ValueError
        When the list is empty, or a rule names an unknown method or parameter, or a parameter is
        of the wrong type or beyond its range (``top_k`` at most 1000, ...); the message names the
        rule's position.
    """
    if data is None:
        return None
    if not isinstance(data, list):
        raise TypeError("not a list")
    if not data:
        raise ValueError("the list holds no rule: give at least one, or null for the default rule")
    rules = []
    for r in data:
        if (not isinstance(r, dict) or not isinstance(r.get("method"), str)
                or not isinstance(r.get("params", {}), dict)):
            raise TypeError(f"bad rule {r!r}")
        unknown = sorted(set(r) - {"method", "columns", "params"})
        if unknown:
            raise TypeError(f"rule {len(rules)} holds the unknown keys {unknown[:5]} (a rule holds method, columns "
                            "and params)")
        cols = r.get("columns")
        if cols is not None and not (isinstance(cols, list) and cols and all(isinstance(c, str) for c in cols)):
            raise TypeError(f"bad columns {cols!r}")
        try:
            _check_rule_params(r["method"], dict(r.get("params", {})), cols)
        except ValueError as exc:
            raise ValueError(f"rule {len(rules)} ({r['method']} on {cols}): {exc}") from None
        rules.append((r["method"], cols, dict(r.get("params", {}))))
    return rules
