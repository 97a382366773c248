"""The output budget: what one execution sends back, held to its limit.

:mod:`.tail` keeps the last bytes of what is withheld, :mod:`.output`
(:class:`OutputBudget`) counts an execution's output and spills what is past the
budget to a file, and :mod:`.filter` (:class:`BudgetFilter`) applies it to an
execution's stream of messages, as every :class:`~lmc_runtime.computer.Computer`
does by default.
"""

from __future__ import annotations

from .filter import MESSAGE_OVERHEAD, BudgetFilter, within_budget
from .output import OutputBudget, Truncation

__all__ = ["MESSAGE_OVERHEAD", "BudgetFilter", "OutputBudget", "Truncation", "within_budget"]
