"""The fitted ranking's weights (``fitted_rank``): written by the bench that fits them, not by hand.

    python bench/retrieval_locomo.py locomo-dev.json --reuse --fit --write-weights

Fitted on 6 LoCoMo conversations (883 questions of categories 1-4), every
candidate turn of their pools a row (``bench/rank_fit.py``); the figures in bench/README.md
are held out by conversation.
"""

# One weight per fitted_rank.FEATURES entry, then the bias.
POINT_WEIGHTS: tuple[float, ...] = (
    8.0374,
    9.3405,
    2.6227,
    0.7856,
    3.4844,
    0.4379,
    -2.4076,
    0.6667,
    0.0437,
    0.4306,
    0.7439,
    2.7482,
    0.8096,
    0.7520,
    0.3619,
    1.6757,
    -0.4402,
    -7.9315,
)
# One weight per fitted_rank.NEIGHBOUR_FEATURES entry, then the bias.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (
    0.8617,
    -0.0013,
    0.0413,
    -0.0688,
    1.4881,
    0.0569,
    0.5570,
    -0.0569,
    -2.2054,
)
