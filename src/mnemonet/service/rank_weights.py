"""The fitted ranking's weights (``fitted_rank``): written by the bench that fits them, not by hand.

    python bench/retrieval_locomo.py locomo-dev.json --reuse --fit --write-weights

Fitted on 6 LoCoMo conversations (883 questions of categories 1-4), every
candidate turn of their pools a row (``bench/rank_fit.py``); the figures in bench/README.md
are held out by conversation.
"""

# One weight per fitted_rank.FEATURES entry, then the bias.
POINT_WEIGHTS: tuple[float, ...] = (
    7.5587,
    8.9347,
    0.1222,
    0.9819,
    3.2600,
    0.4504,
    -2.3883,
    0.6854,
    -0.0598,
    0.4841,
    0.7734,
    5.3327,
    0.8048,
    0.7364,
    0.3006,
    1.7667,
    -0.4993,
    -0.6130,
    2.3531,
    1.1961,
    3.0089,
    -2.4399,
    -2.5313,
    -8.0285,
)
# One weight per fitted_rank.NEIGHBOUR_FEATURES entry, then the bias.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (
    0.9112,
    -0.0303,
    0.0596,
    -0.0634,
    1.1822,
    0.1904,
    0.4149,
    -0.3257,
    -1.8482,
)
