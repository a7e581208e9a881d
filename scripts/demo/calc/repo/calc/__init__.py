from calc.ops import add, mul

__all__ = ["add", "mul"]
