"""Truncated backpropagation through time with a burn-in phase, after Schiller, Heinrich, Lopez &
Müller, "Tuning the burn-in phase in training recurrent neural networks improves their performance"
(ICLR 2026, arXiv 2602.10911).

* :func:`make_data` — a simulated Wiener-Hammerstein system (two lightly damped resonances around a
  saturating nonlinearity; generated here, seeded), independent train and test records;
* :func:`train_tbptt` — a GRU trained on random windows with the loss counted after a burn-in of
  ``m`` steps (``m = 0``: truncation without burn-in), the burn-in chosen per epoch;
* :func:`train_stateful` — carried-state truncated BPTT (contiguous streams, state carried across
  windows, every step in the loss), the usual alternative to a burn-in;
* :func:`train_full` — full BPTT over the whole record (the baseline truncation approximates).

Scale: ``benchmarks/tbptt.py``, a 12-unit GRU, windows of 32, 1,000 training samples, 300 Adam steps; the evaluator
``tbptt_burnin``, a 12-unit LSTM, windows of 100, 5,000-sample records, 600 Adam steps, averaged over 8 data seeds —
far below the paper's benchmarks
(Silverbox, the real Wiener-Hammerstein data, forecasting sets), which are not on disk here; the
forecasting series of the issue is not built. Imports nothing else of ours (numpy, torch).
"""

from hifo.problems.tbptt._data import make_data, wiener_hammerstein
from hifo.problems.tbptt._train import WASHOUT, GRUModel, TBPTTRun, train_full, train_stateful, train_tbptt

__all__ = ["WASHOUT", "GRUModel", "TBPTTRun", "make_data", "train_full", "train_stateful", "train_tbptt", "wiener_hammerstein"]
