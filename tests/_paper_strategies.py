"""The paper's seven strategies as plain modAL strategy functions, taken from the one registry
(:data:`skrisk.experiments.STRATEGIES`) for the tests that run every strategy."""

from skrisk.experiments import STRATEGIES as REGISTRY

#: risk sampling (skrisk's default) and the paper's six baselines
PAPER = ("risk", "random", "entropy", "bald", "coreset", "egl", "badge")

#: name -> strategy function
STRATEGIES = {name: REGISTRY[name].standalone() for name in PAPER}
