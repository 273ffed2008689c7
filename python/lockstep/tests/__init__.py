"""lockstep's own tests, shipped with the package (as APSW ships its own):
python3 -m lockstep.tests runs them. They need numpy (Debian package
python3-numpy) and the command-line program (LOCKSTEP_BIN, else lockstep on
PATH), whose runs the package's runs are compared with; a missing one fails
the test naming what to install, it never skips."""
