"""Prior-data fitted networks shared by pfn_causal and limix (import the submodules):

- scm:   random structural causal models with do() — numpy only (the synthetic prior);
- model: the in-context transformer whose queries attend to context only (S/N/F steps);
- train: the pretraining / fine-tuning loop, batches drawn from (seed, stream, step);
- heads: the bar-distribution (Riemann) regression head.

Paper-specific tokenisers, heads and objectives stay in the papers' folders.
"""
