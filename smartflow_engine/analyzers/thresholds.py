"""Moved to :mod:`smartflow_engine.rules` (the one rule table, below analyzers and solver)."""

from ..rules import LEVELS, RULES, Band, Cond, Level, Rule, rules_for, threshold

__all__ = ["LEVELS", "RULES", "Band", "Cond", "Level", "Rule", "rules_for", "threshold"]
