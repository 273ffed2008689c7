"""python3 -m lockstep.tests [-k PATTERN]: every test, one cmocka-style line a
case ("[ RUN      ]", "[       OK ]", "[  FAILED  ]"), the lines lockstep's
tests/run_tests.sh counts; exit status 1 when any failed."""

import argparse
import sys
import traceback
import unittest


class CmockaResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.bad = 0

    @staticmethod
    def name(test):
        return test.id().split(".")[-1]

    def startTest(self, test):
        super().startTest(test)
        self._failed = False
        print("[ RUN      ] %s" % self.name(test), flush=True)

    def _fail(self, test, err):
        self._failed = True
        text = "".join(traceback.format_exception(*err))
        print("".join("    " + line + "\n" for line in text.rstrip().split("\n")), end="", flush=True)

    def addError(self, test, err):
        super().addError(test, err)
        self._fail(test, err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._fail(test, err)

    def addSkip(self, test, reason):
        # lockstep's tests do not skip: a skip that hides a broken feature is a defect.
        super().addSkip(test, reason)
        self._failed = True
        print("    skipped: %s" % reason, flush=True)

    def stopTest(self, test):
        super().stopTest(test)
        if self._failed:
            self.bad += 1
            print("[  FAILED  ] %s" % self.name(test), flush=True)
        else:
            print("[       OK ] %s" % self.name(test), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m lockstep.tests")
    ap.add_argument("-k", dest="pattern", help="only tests whose name contains PATTERN")
    args = ap.parse_args(argv)
    loader = unittest.TestLoader()
    if args.pattern:
        loader.testNamePatterns = ["*%s*" % args.pattern]
    suite = loader.loadTestsFromName("lockstep.tests.test_lockstep")
    result = CmockaResult()
    suite.run(result)
    print("%d passed, %d failed" % (result.testsRun - result.bad, result.bad))
    return 1 if result.bad or result.testsRun == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
