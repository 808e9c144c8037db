"""Standard atomic weights for Z = 1-100, g/mol (private helper of cross_sections).

Values: IUPAC/CIAAW standard atomic weights (M. E. Wieser and T. B. Coplen, Pure Appl.
Chem. 83, 359 (2011), "Atomic weights of the elements 2009"), as also listed in NIST's
"Atomic Weights and Isotopic Compositions"; for elements without stable isotopes, the
mass number of the longest-lived isotope. xraylib rounds its atomic weights to 0.01 g/mol
(1.01 for hydrogen, 0.2 % off), which would shift mass fractions and electron densities,
so this table is used for those instead.
"""

ATOMIC_WEIGHTS = (
    1.00794, 4.002602, 6.941, 9.012182, 10.811, 12.0107, 14.0067, 15.9994,
    18.9984032, 20.1797, 22.98976928, 24.3050, 26.9815386, 28.0855, 30.973762,
    32.065, 35.453, 39.948, 39.0983, 40.078, 44.955912, 47.867, 50.9415, 51.9961,
    54.938045, 55.845, 58.933195, 58.6934, 63.546, 65.38, 69.723, 72.64, 74.92160,
    78.96, 79.904, 83.798, 85.4678, 87.62, 88.90585, 91.224, 92.90638, 95.96, 98.0,
    101.07, 102.90550, 106.42, 107.8682, 112.411, 114.818, 118.710, 121.760, 127.60,
    126.90447, 131.293, 132.9054519, 137.327, 138.90547, 140.116, 140.90765, 144.242,
    145.0, 150.36, 151.964, 157.25, 158.92535, 162.500, 164.93032, 167.259,
    168.93421, 173.054, 174.9668, 178.49, 180.94788, 183.84, 186.207, 190.23,
    192.217, 195.084, 196.966569, 200.59, 204.3833, 207.2, 208.98040, 209.0, 210.0,
    222.0, 223.0, 226.0, 227.0, 232.03806, 231.03588, 238.02891, 237.0, 244.0,
    243.0, 247.0, 247.0, 251.0, 252.0, 257.0,
)


def atomic_weight(z: int) -> float:
    """Standard atomic weight of element ``z`` (1-100) in g/mol."""
    return ATOMIC_WEIGHTS[z - 1]
