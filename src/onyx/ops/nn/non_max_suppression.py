"""NonMaxSuppression (v10, v11): greedy per (batch, class) selection by score with IoU suppression."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._shapes import nms_rule
from onyx.ops.registry import op, shape_rule


def _scalar(v, default, kind=float):
    if v is None or np.size(v) == 0:
        return default
    return kind(np.asarray(v).reshape(-1)[0])


@op("NonMaxSuppression", since=10)
def non_max_suppression(
    boxes,
    scores,
    max_output_boxes_per_class=None,
    iou_threshold=None,
    score_threshold=None,
    *,
    center_point_box=0,
):
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3:
        raise InvalidArgument(
            f"NonMaxSuppression: boxes {boxes.shape} must be (B, S, 4), scores {scores.shape} (B, C, S)"
        )
    nb, ns = boxes.shape[:2]
    if scores.shape[0] != nb or scores.shape[2] != ns:
        raise InvalidArgument(f"NonMaxSuppression: scores {scores.shape} do not match boxes {boxes.shape}")
    max_out = _scalar(max_output_boxes_per_class, 0, int)
    iou_thr = _scalar(iou_threshold, 0.0)
    score_thr = _scalar(score_threshold, None) if score_threshold is not None else None
    result = []
    if max_out <= 0:
        return np.zeros((0, 3), dtype=np.int64)
    b = boxes.astype(np.float64)
    if center_point_box:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        y1, x1, y2, x2 = yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    else:
        y1 = np.minimum(b[..., 0], b[..., 2])
        y2 = np.maximum(b[..., 0], b[..., 2])
        x1 = np.minimum(b[..., 1], b[..., 3])
        x2 = np.maximum(b[..., 1], b[..., 3])
    area = (y2 - y1) * (x2 - x1)
    for bi in range(nb):
        for ci in range(scores.shape[1]):
            s = scores[bi, ci].astype(np.float64)
            cand = np.arange(ns)
            if score_thr is not None:
                cand = cand[s > score_thr]
            order = cand[np.argsort(-s[cand], kind="stable")]
            kept = 0
            while order.size and kept < max_out:
                i = order[0]
                result.append((bi, ci, i))
                kept += 1
                rest = order[1:]
                iy1 = np.maximum(y1[bi, i], y1[bi, rest])
                ix1 = np.maximum(x1[bi, i], x1[bi, rest])
                iy2 = np.minimum(y2[bi, i], y2[bi, rest])
                ix2 = np.minimum(x2[bi, i], x2[bi, rest])
                inter = np.maximum(iy2 - iy1, 0) * np.maximum(ix2 - ix1, 0)
                union = area[bi, i] + area[bi, rest] - inter
                with np.errstate(invalid="ignore", divide="ignore"):
                    iou = np.where(union > 0, inter / union, 0.0)
                order = rest[iou <= iou_thr]
    return np.array(result, dtype=np.int64).reshape(-1, 3)


shape_rule("NonMaxSuppression")(nms_rule)
