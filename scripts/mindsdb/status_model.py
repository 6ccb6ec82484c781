"""Models for MindsDB's Bring-Your-Own-Model engine that never become ready, used only by
scripts/record-mindsdb-fixtures.ts to record how the server answers for a model that is still
training or that failed training.

- USING hold_until='<path>': training waits until that file exists (at most 10 minutes), so the
  model stays in status 'training' while the answers are recorded.
- Anything else: training raises, so the model ends in status 'error'.
"""

import os
import time


class StatusModel:
    def train(self, df, target_col, args=None):
        hold_until = ((args or {}).get("using") or {}).get("hold_until")
        if hold_until is None:
            raise ValueError("this model refuses to train")
        deadline = time.time() + 600
        while not os.path.exists(hold_until) and time.time() < deadline:
            time.sleep(0.1)
        self.target = target_col

    def predict(self, df, args=None):
        raise ValueError("this model never predicts")
