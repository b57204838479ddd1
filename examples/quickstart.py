"""Five operators on small inputs, the operator catalog, and one ValidationError.

Run: python examples/quickstart.py
"""

import numpy as np

import dmljax


def main():
    # ELEMENT_WISE_IF: the page's example.
    cond = np.array([[1, 0], [1, 1]], np.uint8)
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[9, 8], [7, 6]], np.float32)
    print("IF            ", dmljax.element_wise_if(cond, a, b).tolist(), " (page: [[1, 8], [3, 4]])")

    x = np.array([-2.0, -0.5, 0.0, 1.5], np.float32)
    print("SCALED_ELU    ", dmljax.activation_scaled_elu(x).tolist())

    print("MODULUS_FLOOR ", dmljax.element_wise_modulus_floor(
        np.array([-7.0, 7.0, 1e9], np.float32), np.array([3.0, -3.0, np.pi], np.float32)).tolist(),
        " (Python: -7 % 3 = 2, 7 % -3 = -2)")

    print("THRESHOLD     ", dmljax.element_wise_threshold(
        np.array([-1.0, np.nan, 2.0], np.float32), min=0.0, scale_bias=dmljax.ScaleBias(2.0, 1.0)).tolist(),
        " (g(x) = 2x + 1 first; NaN gives Min)")

    print("CONSTANT_POW  ", dmljax.element_wise_constant_pow(
        np.array([-2.0, 0.0, 3.0], np.float32), exponent=3).tolist(),
        " and 0.5:", dmljax.element_wise_constant_pow(np.array([-4.0, 4.0], np.float32), exponent=0.5).tolist())

    # The catalog: every DirectML operator, implemented or not.
    entries = dmljax.catalog()
    print(f"\ndmljax {dmljax.__version__} implements {sum(e.implemented for e in entries)} of "
          f"DirectML's {len(entries)} operators.")
    gemm = dmljax.get_operator("GEMM")  # any spelling: DML_OPERATOR_GEMM, GEMM, gemm or 54
    print(f"{gemm.spec.enum_name}: value {gemm.spec.value}, introduced in {gemm.spec.introduced.version}")

    # Three dimensions are refused at feature level 2.0: DirectML takes 4 or 5 there.
    try:
        dmljax.activation_scaled_elu(np.ones((2, 3, 4), np.float32), feature_level="2.0")
    except dmljax.ValidationError as err:
        print("\nValidationError:", err, sep="\n")


if __name__ == "__main__":
    main()
