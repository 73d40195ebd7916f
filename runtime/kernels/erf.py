"""The error function, vectorised in float64: numpy has no erf, and scipy is not a dependency.

A port of FreeBSD's s_erf.c (Sun's fdlibm, 1993; the form Go's math/erf.go simplifies), accurate to under
one float64 ulp: so rounding its result once to f32, f16 or bf16 is the correctly rounded value but for
double rounding at a tie. Each of fdlibm's four intervals of |x| is one masked polynomial evaluation over
the elements that fall in it; erf is odd, so the sign is put back at the end.

    |x| < 0.84375          x + x * P(x^2) / Q(x^2)
    0.84375 <= |x| < 1.25  erx + P1(s) / Q1(s), s = |x| - 1, erx = erf(1) rounded to 24 bits
    1.25 <= |x| < 6        1 - exp(-z^2 - 0.5625) * exp((z - |x|)(z + |x|) + R(1/x^2) / S(1/x^2)) / |x|,
                           z = |x| with its low 32 bits cleared (so z^2 is exact); two rational fits R/S
                           split at 1/0.35
    |x| >= 6               1 (erfc(6) = 2.2e-17 is below half a float64 ulp of 1)
NaN stays NaN; erf(+-inf) = +-1.
"""

from __future__ import annotations

import numpy as np

from poolir.runtime.kernels.precision import is_float

_ERX = 8.45062911510467529297e-01
_EFX = 1.28379167095512586316e-01  # 2/sqrt(pi) - 1: erf(x) = x + efx * x below 2^-28
# [0, 0.84375): P and Q in x^2, lowest degree first (Q's constant 1 is implied)
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# [0.84375, 1.25): P1 and Q1 in s = |x| - 1
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# [1.25, 1/0.35): R1 and S1 in 1/x^2
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
# [1/0.35, 6): R2 and S2 in 1/x^2
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _poly(t: np.ndarray, coefficients, one: bool = False) -> np.ndarray:
    """c0 + t * (c1 + t * (...)) by Horner, in fdlibm's order; `one`: 1 + t * (c0 + t * (...))."""
    result = np.full_like(t, coefficients[-1])
    for c in coefficients[-2::-1]:
        result = result * t + c
    return 1 + t * result if one else result


def erf_float64(x: np.ndarray) -> np.ndarray:
    """erf of a float64 array, elementwise (see the module docstring for the method)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    result = np.ones_like(a)  # |x| >= 6 (and inf)
    small = a < 0.84375
    if small.any():
        t = a[small]
        z = t * t
        result[small] = np.where(t < 2.0 ** -28, t + _EFX * t, t + t * (_poly(z, _PP) / _poly(z, _QQ, one=True)))
    middle = (a >= 0.84375) & (a < 1.25)
    if middle.any():
        s = a[middle] - 1
        result[middle] = _ERX + _poly(s, _PA) / _poly(s, _QA, one=True)
    tail = (a >= 1.25) & (a < 6)
    if tail.any():
        t = a[tail]
        s = 1 / (t * t)
        near = t < 1 / 0.35
        ratio = np.where(near, _poly(s, _RA) / _poly(s, _SA, one=True), _poly(s, _RB) / _poly(s, _SB, one=True))
        z = (t.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)).view(np.float64)
        result[tail] = 1 - np.exp(-z * z - 0.5625) * np.exp((z - t) * (z + t) + ratio) / t
    result[np.isnan(a)] = np.nan
    return np.copysign(result, x)


def erf(x: np.ndarray) -> np.ndarray:
    """erf elementwise, computed in float64 and rounded once to x's floating type."""
    if not is_float(x.dtype):
        raise TypeError(f"erf takes a floating type, got {x.dtype}")
    return erf_float64(x.astype(np.float64)).astype(x.dtype, copy=False)


__all__ = ["erf", "erf_float64"]
