"""mixle: finite mixture models by EM on CPUs and GPUs.

Estimators with scikit-learn's interface over mixle's native engine:

- :class:`GaussianMixture` — a drop-in for ``sklearn.mixture.GaussianMixture``;
- :class:`MixtureModel` — mixtures of any family over column ranges (mixed records).

``mixle.family_names()`` lists the component families; ``mixle.Model`` is the engine's model
(``to_json``/``from_json`` in mixle's model format, picklable).
"""

from ._core import Model, __version__
from ._core import family_names as _family_names
from ._gaussian_mixture import GaussianMixture
from ._mixture_model import MixtureModel


def family_names() -> list[str]:
    """The component families this build of mixle knows."""
    return list(_family_names())


__all__ = ["GaussianMixture", "MixtureModel", "Model", "family_names", "__version__"]
