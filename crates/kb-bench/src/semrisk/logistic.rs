//! Logistic regression on embedding vectors for `kb-bench semrisk`: class-balanced, L2-penalised,
//! full-batch gradient descent (Adam) on standardised features, the result folded back into one
//! weight per dimension and a bias that apply to the raw vector. Small enough to need no crate.

/// A linear classifier on raw vectors: `score = sigmoid(weights · v + bias)`.
#[derive(Debug, Clone)]
pub struct Linear {
    pub weights: Vec<f32>,
    pub bias: f32,
}

impl Linear {
    pub fn score(&self, vector: &[f32]) -> f32 {
        let z: f32 = self.weights.iter().zip(vector).map(|(w, x)| w * x).sum::<f32>() + self.bias;
        1.0 / (1.0 + (-z).exp())
    }
}

/// Training settings; the defaults were fixed before any left-out set was looked at.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub epochs: usize,
    pub learning_rate: f64,
    /// L2 penalty on the standardised weights (not on the bias).
    pub l2: f64,
    /// Each set weighs the same within its class (else each text does).
    pub balance_sets: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { epochs: 300, learning_rate: 0.05, l2: 1e-3, balance_sets: false }
    }
}

/// Each text's share of the loss: each class weighs half, whatever its size; within a class each
/// text the same, or with `balance_sets` each set (`groups`) the same.
fn sample_weights(labels: &[bool], groups: &[usize], balance_sets: bool) -> Vec<f64> {
    let mut sizes: std::collections::HashMap<(bool, usize), usize> = std::collections::HashMap::new();
    for (&label, &group) in labels.iter().zip(groups) {
        *sizes.entry((label, if balance_sets { group } else { 0 })).or_default() += 1;
    }
    let groups_in = |label: bool| sizes.keys().filter(|(l, _)| *l == label).count().max(1) as f64;
    let (positive_groups, negative_groups) = (groups_in(true), groups_in(false));
    labels
        .iter()
        .zip(groups)
        .map(|(&label, &group)| {
            let size = sizes[&(label, if balance_sets { group } else { 0 })] as f64;
            0.5 / (if label { positive_groups } else { negative_groups } * size)
        })
        .collect()
}

/// Fits `labels` (true: risky) on `vectors`; `groups` names each text's set.
pub fn train(vectors: &[&[f32]], labels: &[bool], groups: &[usize], settings: Settings) -> Linear {
    let n = vectors.len();
    let dims = vectors.first().map_or(0, |v| v.len());
    // Standardise: the dimensions of a normalised embedding differ a lot in spread.
    let mut mean = vec![0.0f64; dims];
    for vector in vectors {
        for (m, &x) in mean.iter_mut().zip(vector.iter()) {
            *m += f64::from(x);
        }
    }
    mean.iter_mut().for_each(|m| *m /= n.max(1) as f64);
    let mut std = vec![0.0f64; dims];
    for vector in vectors {
        for ((s, &x), m) in std.iter_mut().zip(vector.iter()).zip(&mean) {
            *s += (f64::from(x) - m).powi(2);
        }
    }
    std.iter_mut().for_each(|s| *s = (*s / n.max(1) as f64).sqrt().max(1e-6));
    let standard: Vec<Vec<f64>> = vectors
        .iter()
        .map(|vector| vector.iter().zip(&mean).zip(&std).map(|((&x, m), s)| (f64::from(x) - m) / s).collect())
        .collect();
    let sample_weight = sample_weights(labels, groups, settings.balance_sets);

    let mut w = vec![0.0f64; dims];
    let mut b = 0.0f64;
    let (mut m_w, mut v_w) = (vec![0.0f64; dims], vec![0.0f64; dims]);
    let (mut m_b, mut v_b) = (0.0f64, 0.0f64);
    let (beta1, beta2, epsilon) = (0.9f64, 0.999f64, 1e-8f64);
    let mut grad = vec![0.0f64; dims];
    for epoch in 1..=settings.epochs {
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut grad_b = 0.0;
        for ((x, &label), &weight) in standard.iter().zip(labels).zip(&sample_weight) {
            let z: f64 = w.iter().zip(x).map(|(w, x)| w * x).sum::<f64>() + b;
            let p = 1.0 / (1.0 + (-z).exp());
            let error = (p - if label { 1.0 } else { 0.0 }) * weight;
            for (g, xi) in grad.iter_mut().zip(x) {
                *g += error * xi;
            }
            grad_b += error;
        }
        let t = epoch as i32;
        for i in 0..dims {
            let g = grad[i] + settings.l2 * w[i];
            m_w[i] = beta1 * m_w[i] + (1.0 - beta1) * g;
            v_w[i] = beta2 * v_w[i] + (1.0 - beta2) * g * g;
            let m_hat = m_w[i] / (1.0 - beta1.powi(t));
            let v_hat = v_w[i] / (1.0 - beta2.powi(t));
            w[i] -= settings.learning_rate * m_hat / (v_hat.sqrt() + epsilon);
        }
        m_b = beta1 * m_b + (1.0 - beta1) * grad_b;
        v_b = beta2 * v_b + (1.0 - beta2) * grad_b * grad_b;
        b -= settings.learning_rate * (m_b / (1.0 - beta1.powi(t))) / ((v_b / (1.0 - beta2.powi(t))).sqrt() + epsilon);
    }
    // Fold the standardisation in: w·(x-m)/s + b = (w/s)·x + (b - Σ w m / s).
    let weights: Vec<f32> = w.iter().zip(&std).map(|(w, s)| (w / s) as f32).collect();
    let bias = (b - w.iter().zip(&mean).zip(&std).map(|((w, m), s)| w * m / s).sum::<f64>()) as f32;
    Linear { weights, bias }
}

/// The area under the ROC curve of `scores` for `labels` (ties count half).
pub fn auc(scores: &[f32], labels: &[bool]) -> f64 {
    let positives: Vec<f32> = scores.iter().zip(labels).filter(|&(_, &l)| l).map(|(&s, _)| s).collect();
    let negatives: Vec<f32> = scores.iter().zip(labels).filter(|&(_, &l)| !l).map(|(&s, _)| s).collect();
    let mut wins = 0.0;
    for p in &positives {
        for n in &negatives {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (positives.len() * negatives.len()).max(1) as f64
}

/// The lowest threshold at which at most `share` of `ordinary_scores` are above it (a score is
/// flagged when it is strictly greater).
pub fn threshold_for(ordinary_scores: &[f32], share: f64) -> f32 {
    let mut sorted = ordinary_scores.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let allowed = (share * sorted.len() as f64).floor() as usize;
    sorted.get(allowed).copied().unwrap_or(0.0)
}

/// Scores of every item from a model that did not see it: `folds` interleaved folds.
pub fn out_of_fold(
    vectors: &[&[f32]],
    labels: &[bool],
    groups: &[usize],
    folds: usize,
    settings: Settings,
) -> Vec<f32> {
    let mut scores = vec![0.0f32; vectors.len()];
    for fold in 0..folds {
        let (mut train_v, mut train_l, mut train_g) = (Vec::new(), Vec::new(), Vec::new());
        for (i, ((v, &l), &g)) in vectors.iter().zip(labels).zip(groups).enumerate() {
            if i % folds != fold {
                train_v.push(*v);
                train_l.push(l);
                train_g.push(g);
            }
        }
        let model = train(&train_v, &train_l, &train_g, settings);
        for (i, v) in vectors.iter().enumerate() {
            if i % folds == fold {
                scores[i] = model.score(v);
            }
        }
    }
    scores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_two_clouds_and_the_threshold_keeps_to_its_share() {
        let mut vectors = Vec::new();
        let mut labels = Vec::new();
        for i in 0..200 {
            let jitter = (i as f32 * 0.37).sin() * 0.1;
            let label = i % 4 == 0;
            let centre = if label { 0.5 } else { -0.5 };
            vectors.push(vec![centre + jitter, jitter, 1.0]);
            labels.push(label);
        }
        let refs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
        let model = train(&refs, &labels, &vec![0; 200], Settings::default());
        let correct = refs.iter().zip(&labels).filter(|&(v, &l)| (model.score(v) > 0.5) == l).count();
        assert_eq!(correct, 200);
        let ordinary: Vec<f32> = (0..100).map(|i| i as f32 / 100.0).collect();
        let threshold = threshold_for(&ordinary, 0.01);
        assert_eq!(ordinary.iter().filter(|&&s| s > threshold).count(), 1);
    }

    #[test]
    fn each_class_weighs_half_and_balanced_sets_weigh_the_same() {
        let labels = [true, false, false, false, true, false];
        let groups = [0, 0, 0, 1, 1, 1];
        let by_text = sample_weights(&labels, &groups, false);
        let sum = |label: bool, weights: &[f64]| {
            weights.iter().zip(&labels).filter(|&(_, &l)| l == label).map(|(w, _)| w).sum::<f64>()
        };
        assert!((sum(true, &by_text) - 0.5).abs() < 1e-12 && (sum(false, &by_text) - 0.5).abs() < 1e-12);
        let by_set = sample_weights(&labels, &groups, true);
        // Ordinary: set 0 has two texts, set 1 two: each set a quarter.
        assert!((by_set[1] + by_set[2] - 0.25).abs() < 1e-12 && (by_set[3] + by_set[5] - 0.25).abs() < 1e-12);
        assert!((sum(true, &by_set) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn auc_counts_ranked_pairs_and_ties_half() {
        assert_eq!(auc(&[0.9, 0.8, 0.1, 0.2], &[true, true, false, false]), 1.0);
        assert_eq!(auc(&[0.1, 0.2, 0.9, 0.8], &[true, true, false, false]), 0.0);
        assert_eq!(auc(&[0.5, 0.5], &[true, false]), 0.5);
    }
}
