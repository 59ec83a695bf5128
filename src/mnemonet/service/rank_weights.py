"""The fitted ranking's weights (``fitted_rank``): written by the bench that fits them, not by hand.

    python bench/retrieval_locomo.py /work/shared/data/locomo-dev.json --reuse --fit --write-weights

Placeholder until the first fit: the dense and keyword evidence only.
"""

# One weight per fitted_rank.FEATURES entry, then the bias.
POINT_WEIGHTS: tuple[float, ...] = (
    6.0, 9.0, 3.0, 1.0, 5.0, 0.4, -2.5, 6.0, 6.0, 0.4, 0.6, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, -6.0,
)
# One weight per fitted_rank.NEIGHBOUR_FEATURES entry, then the bias.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
