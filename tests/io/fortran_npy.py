"""Fixtures for tests/io/test_npy.cpp: arrays that numpy.save writes in Fortran order. Run from the
repository root (NumPy 1.24.2 wrote the committed files):

    /usr/bin/python3 tests/io/fortran_npy.py

numpy.save writes 'fortran_order': True for an array that is Fortran-contiguous but not
C-contiguous, keeping its bytes as they are: a transposed matrix, or np.asfortranarray of a 3-D one.
"""
import numpy as np

OUT = "tests/io/fixtures/"
W = np.arange(6, dtype="<f4").reshape(2, 3)
np.save(OUT + "fortran_transposed_2x3.npy", W.T)  # shape (3, 2); C order 0 3 1 4 2 5
np.save(OUT + "fortran_3d.npy", np.asfortranarray(np.arange(24, dtype="<f4").reshape(2, 3, 4)))
# shape (5, 4, 3, 2): element (i, j, k, l) is l·60 + k·20 + j·5 + i
np.save(OUT + "fortran_transposed_4d_i8.npy", np.arange(120, dtype="<i8").reshape(2, 3, 4, 5).T)
