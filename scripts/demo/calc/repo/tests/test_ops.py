import unittest

from calc import mul


class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)
