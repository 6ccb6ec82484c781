"""A small model for MindsDB's Bring-Your-Own-Model engine, used by batch-scorer's real-server suite.

MindsDB runs this file itself (type 'inhouse': in the server's own process, with the pandas and
NumPy it already carries), so no deep-learning stack and no model hub is needed, and everything
between the HTTP request and this class is the real server.

- A numeric target is fitted by least squares on the numeric inputs and one-hot categories. An
  input is numeric when every value it has in training is a number, whatever dtype pandas gave the
  column: a column of integers with blanks comes as floats or objects, and at predict time its
  dtype follows the rows of each request, so typing by dtype made a row's answer depend on the
  rows sent with it. Its
  answer carries `<target>_confidence`, `<target>_min` and `<target>_max` (a 95% interval from the
  training residuals), the members the lightwood engine gave for numeric targets.
- Any other target is a class: the nearest class centre in standardised input space, with a
  softmax over the distances as `<target>_confidence`.
- A row whose numeric input is text that is not a number is refused: predict raises, naming the
  row and column, as an engine does on input it cannot read. The whole request then fails with
  MindsDB's own error answer.
"""

import numpy as np
import pandas as pd


def _all_numbers(column):
    """Whether every value the column has is a number (booleans are not)."""
    present = column.dropna()
    if len(present) == 0 or pd.api.types.is_bool_dtype(present):
        return False
    return bool(pd.to_numeric(present, errors="coerce").notna().all())


class BatchScorerLinearModel:
    def train(self, df, target_col, args=None):
        self.target = target_col
        inputs = [c for c in df.columns if c != target_col]
        self.numeric = [c for c in inputs if _all_numbers(df[c])]
        self.categories = {c: sorted(str(v) for v in df[c].dropna().unique()) for c in inputs if c not in self.numeric}
        self.means = {c: float(pd.to_numeric(df[c]).mean()) for c in self.numeric}
        self.scales = {c: float(pd.to_numeric(df[c]).std() or 1.0) for c in self.numeric}
        x = self._design(df)
        y = df[target_col]
        self.is_numeric = _all_numbers(y)
        if self.is_numeric:
            coef, *_ = np.linalg.lstsq(x, pd.to_numeric(y).to_numpy(dtype=float), rcond=None)
            self.coef = coef.tolist()
            residuals = pd.to_numeric(y).to_numpy(dtype=float) - x @ coef
            self.spread = float(1.96 * residuals.std())
        else:
            labels = y.astype(str).to_numpy()
            self.classes = sorted(set(labels))
            self.centres = [x[labels == c].mean(axis=0).tolist() for c in self.classes]

    def predict(self, df, args=None):
        x = self._design(df, check=True)
        out = pd.DataFrame(index=df.index)
        if self.is_numeric:
            value = np.round(x @ np.array(self.coef), 2)
            out[self.target] = value
            inputs = list(self.numeric) + list(self.categories)
            present = df.reindex(columns=inputs).notna().mean(axis=1).to_numpy()
            out[f"{self.target}_confidence"] = np.round(0.5 + 0.45 * present, 4)
            out[f"{self.target}_min"] = np.round(value - self.spread, 2)
            out[f"{self.target}_max"] = np.round(value + self.spread, 2)
        else:
            distances = np.stack([np.sqrt(((x - np.array(c)) ** 2).sum(axis=1)) for c in self.centres], axis=1)
            weights = np.exp(-(distances - distances.min(axis=1, keepdims=True)))
            probabilities = weights / weights.sum(axis=1, keepdims=True)
            best = probabilities.argmax(axis=1)
            out[self.target] = [self.classes[i] for i in best]
            out[f"{self.target}_confidence"] = np.round(probabilities.max(axis=1), 4)
        return out

    def describe(self, attribute=None):
        """The document's `info` shape for 'info'; MindsDB answers its own row for the rest."""
        if attribute != "info":
            return pd.DataFrame()
        inputs = list(self.numeric) + list(self.categories)
        return pd.DataFrame(
            [
                {
                    "accuracies": {"r2_score" if self.is_numeric else "balanced_accuracy_score": None},
                    "column_importances": {c: None for c in inputs},
                    "inputs": inputs,
                    "outputs": [self.target],
                }
            ]
        )

    def _design(self, df, check=False):
        columns = [np.ones(len(df))]
        for c in self.numeric:
            raw = df[c] if c in df.columns else pd.Series([None] * len(df), index=df.index)
            values = pd.to_numeric(raw, errors="coerce")
            if check:
                unreadable = values.isna() & raw.notna() & (raw.astype(str).str.strip() != "")
                if unreadable.any():
                    row = int(np.flatnonzero(unreadable.to_numpy())[0])
                    raise ValueError(f"row {row}: column '{c}' is not a number")
            values = values.fillna(self.means[c])
            columns.append(((values - self.means[c]) / self.scales[c]).to_numpy(dtype=float))
        for c, levels in self.categories.items():
            raw = df[c].astype(str) if c in df.columns else pd.Series([""] * len(df), index=df.index)
            for level in levels:
                columns.append((raw == level).to_numpy(dtype=float))
        return np.stack(columns, axis=1)
