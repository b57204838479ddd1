"""TOP_K and TOP_K1 (the K largest or smallest elements along an axis, and their indices), of the reduction family."""
